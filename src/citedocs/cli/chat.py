"""`citedocs ask --chat`: a conversation on the terminal, each follow-up answered with the turns before it."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.markup import escape

from citedocs.cli.answers import print_answer, show_event
from citedocs.cli.common import console, run
from citedocs.errors import CitedocsError

__all__ = ["PROMPT", "run_chat"]

PROMPT = "? "
WELCOME = "Ask a question; ask follow-ups on the next lines. An empty line or Ctrl-D ends the conversation."


def run_chat(app: Any, first: str | None, *, k: int | None, mode: str | None, as_json: bool) -> None:
    """Read questions from stdin (after `first`, when given) until an empty line or EOF, answering each with
    the conversation so far; `as_json` prints one answer object a line."""
    pending = [first] if first else []
    interactive = sys.stdin.isatty() and not as_json
    if interactive:
        console.print(f"[dim]{WELCOME}[/dim]", highlight=False)

    def read_question() -> str | None:
        if pending:
            return pending.pop()
        if interactive:
            sys.stderr.write(PROMPT)
            sys.stderr.flush()
        line = sys.stdin.readline()
        return line.strip() or None

    def on_answer(data: dict[str, Any] | CitedocsError, dropped: int) -> None:
        if isinstance(data, CitedocsError):
            if as_json:
                _json_line({"error": {"message": data.message, "hint": data.hint}})
            else:
                console.print(f"[red]error:[/red] {escape(str(data))}", highlight=False)
            return
        if as_json:
            _json_line(data)
        else:
            print_answer(data)
            query = data.get("query") or {}
            if query.get("rewrite"):
                console.print(
                    f"[dim](searched with the conversation: {escape(str(query['rewrite']))})[/dim]",
                    highlight=False,
                )
        if dropped:
            console.print(
                f"[dim](the conversation is at its limit: its {dropped} oldest turns are left out "
                f"from now on; start a new one for a new topic)[/dim]",
                highlight=False,
            )
        sys.stdout.flush()

    run(lambda: app.chat(read_question, on_answer, k=k, mode=mode, on_event=None if as_json else show_event))


def _json_line(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, default=str) + "\n")
