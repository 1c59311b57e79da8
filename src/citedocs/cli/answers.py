"""How `citedocs ask` shows an answer: the evidence and tokens as they come, then the checked answer and the
quotes under it. Documents and model output are data: every piece passes cli/terminal.py first."""

from __future__ import annotations

import sys
from typing import Any

import typer
from rich.markup import escape

from citedocs.cli.common import console, out, settings_for
from citedocs.cli.terminal import one_line, shown

__all__ = ["ask_running_server", "evidence_text", "print_answer", "quote_lines", "show_event"]


def ask_running_server(
    db: str | None, question: str, k: int | None, mode: str | None
) -> dict[str, Any] | None:
    """The answer of a `citedocs serve` running on this index (its warm model), or None to answer here; its
    errors end the command, as they would here."""
    from citedocs.cli import remote
    from citedocs.store import is_postgres

    settings = settings_for(db)
    if is_postgres(settings.db):
        return None
    reply = remote.ask(settings.db_path.resolve(), {"question": question, "k": k, "mode": mode})
    if reply is None:
        return None
    if reply.error is not None:
        console.print(
            f"[red]error:[/red] {escape(one_line(reply.error.get('message', '')))} "
            f"{escape(one_line(reply.error.get('hint', '')))}"
        )
        raise typer.Exit(remote.exit_code(reply.status))
    data: dict[str, Any] = reply.body.get("data") or {}
    return data


def show_event(event: Any) -> None:
    """An answer's event as `citedocs ask` shows it while the answer comes: evidence, tokens, fetched pages."""
    if event.event == "evidence" and event.data.get("evidence"):
        sys.stdout.write(shown(evidence_text(event.data)))
        sys.stdout.flush()
    elif event.event == "token":
        sys.stdout.write(shown(event.data["text"]))  # model output: never terminal control
        sys.stdout.flush()
    elif event.event == "fetching":
        console.print(f"[dim]fetching {len(event.data['urls'])} documentation page(s) first …[/dim]")
    elif event.event == "fetched":
        got = event.data
        status = f"{got['chunks']} passages" if got["ok"] else f"failed: {escape(str(got['error']))}"
        console.print(
            f"[dim]  {escape(one_line(got['url']))} · {one_line(status)} · {got['ms']:.0f} ms[/dim]"
        )


def print_answer(data: dict[str, Any]) -> None:
    """An answer as `citedocs ask` prints it after the tokens: checked text, cited sources, what happened,
    and the quotes."""
    if data.get("raw_answer") or data.get("refused_before_model"):
        sys.stdout.write("\n\n")
    out.print("[bold]Answer (citations checked):[/bold] " + shown(data.get("answer", "")).replace("[", r"\["))
    cited = set(data.get("citations") or [])
    for source in data.get("sources", []):
        if source["n"] in cited:
            where = (
                f"p. {source['page']}"
                if source.get("page")
                else f"lines {source['line_start']}-{source['line_end']}"
            )
            path, heading = escape(one_line(source["path"])), escape(one_line(source.get("heading") or "—"))
            out.print(f"  \\[{source['n']}] {path} · {where} · {heading}")
    left_out = data.get("left_out") or []
    if left_out and not data.get("refused"):
        one = len(left_out) == 1
        count, them = f"{len(left_out)} sentence" + ("" if one else "s"), "it" if one else "them"
        out.print(
            f"[dim]({count} of the model's answer left out: asked, it did not find {them} in the sources)[/dim]"
        )
    if data.get("invalid_citations"):
        out.print(f"[yellow]removed citations to missing sources: {data['invalid_citations']}[/yellow]")
    if data.get("finish_reason") == "repetition":
        out.print("[dim](the model began repeating itself and was stopped; the answer keeps one copy)[/dim]")
    if data.get("refused") and data.get("refusal_reason") and not data.get("refused_before_model"):
        out.print(f"[dim](withheld: {escape(one_line(data['refusal_reason']))})[/dim]")
    elif data.get("refused") and data.get("refused_before_model") and data.get("refusal_reason"):
        out.print(f"[dim](refused before asking the model: {escape(one_line(data['refusal_reason']))})[/dim]")
    elif data.get("refused"):
        out.print("[dim](refused: the documents do not answer this)[/dim]")
    for line in quote_lines(data):
        out.print(line)


def quote_lines(data: dict[str, Any]) -> list[str]:
    """The answer's quotes as `citedocs ask` prints them under the synthesis (rich markup, text escaped):
    verbatim, each with its source number and place; labelled as the answer when there is no synthesis."""
    quotes = data.get("quotes") or []
    if not quotes:
        return []
    label = data.get("quotes_label") or "Also in the sources (quoted verbatim)"
    lines = [f"[bold]{escape(str(label))}:[/bold]"]
    for quote in quotes:
        name = one_line(quote.get("url") or str(quote["path"]).rstrip("/").rsplit("/", 1)[-1])
        where = (
            f" p. {quote['page']}"
            if quote.get("page")
            else (f":{quote['line']}" if quote.get("line") else "")
        )
        text = one_line(" ".join(str(quote["text"]).split()))
        lines.append(f"  \\[{quote['n']}] “{escape(text)}”  [dim]({escape(name)}{escape(where)})[/dim]")
    return lines


def evidence_text(data: dict[str, Any]) -> str:
    """The `evidence` event as `citedocs ask` prints it while the model reads."""
    lines = ["While the model reads, the sentences that match best (not the answer):"]
    for item in data["evidence"]:
        name = one_line(str(item["path"]).rstrip("/").rsplit("/", 1)[-1])
        where = f"p. {item['page']}" if item.get("page") else f"{item['line_start']}-{item['line_end']}"
        text = " ".join(str(item["text"]).split())
        lines.append(f"  [{item['n']}] {text}  ({name}:{where})")
    return "\n".join(lines) + "\n\n"
