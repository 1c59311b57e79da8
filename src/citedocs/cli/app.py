"""The `citedocs` command: a thin shell over citedocs.service.Citedocs."""

from __future__ import annotations

import re
import sys
import time
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from citedocs.cli.common import DbOption, JsonOption, console, out, print_json, run, service, settings_for
from citedocs.cli.hit_lines import Style, hit_lines
from citedocs.cli.indexing import embed_and_report, index_and_report
from citedocs.cli.one_off import one_off_mode, with_one_off_note
from citedocs.cli.terminal import one_line, shown

if TYPE_CHECKING:
    pass

NOTHING_REGISTERED = (
    "Nothing to search yet: no folder or site is registered. "
    "Add a folder with `citedocs add PATH` (or a site with `citedocs add-site NAME URL`), then search again."
)
NOTHING_INDEXED = (
    "Nothing is indexed yet. Run `citedocs status` to see whether indexing is still running or files failed; "
    "`citedocs reindex` indexes the registered folders."
)

app = typer.Typer(
    name="citedocs",
    help="Ask your documents; get answers you can check.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:
        from citedocs import __version__

        out.print(f"citedocs {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    """Ask your documents; get answers you can check."""


@app.command()
def add(
    path: Annotated[str, typer.Argument(help="Folder to register and index.")],
    include: Annotated[
        list[str] | None, typer.Option("--include", help="Glob of files to index (repeatable).")
    ] = None,
    exclude: Annotated[
        list[str] | None, typer.Option("--exclude", help="Glob of files to skip (repeatable).")
    ] = None,
    no_index: Annotated[bool, typer.Option("--no-index", help="Register only; index later.")] = False,
    wait: Annotated[
        bool,
        typer.Option(
            "--wait", help="Embed here and return when every passage has its vector (not in the background)."
        ),
    ] = False,
    allow_system_folder: Annotated[
        bool,
        typer.Option("--allow-system-folder", help="Register / , /etc, /proc, your home folder, … anyway."),
    ] = False,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Register a folder (read-only) and index it; returns when keyword search works.

    The embeddings are made by a `citedocs serve` running on the index (its model is warm) or else by a
    background `citedocs embed` (one per index); `citedocs status` shows the progress. `--wait` makes them
    here, before the command returns."""
    with service(db) as app_:
        source = run(
            lambda: app_.add_folder(
                path, include or (), exclude or (), allow_system_folder=allow_system_folder
            )
        )
        if not as_json:
            out.print(f"registered [bold]{escape(one_line(source.uri))}[/bold]")
        if not no_index:
            index_and_report(app_, source.name, False, as_json, background=not wait)
        elif as_json:
            print_json({"name": source.name, "path": source.uri})


@app.command()
def remove(
    target: Annotated[str, typer.Argument(help="Registered folder path or site name.")],
    db: DbOption = None,
) -> None:
    """Unregister a folder or site and purge its index data (your files are untouched)."""
    with service(db) as app_:
        source = run(lambda: app_.remove(target))
        out.print(f"removed {escape(one_line(source.name))}")


@app.command("list")
def list_(db: DbOption = None, as_json: JsonOption = False) -> None:
    """List registered folders and sites with counts and status."""
    with service(db, create=False) as app_:
        infos = run(app_.list_sources)
        if as_json:
            print_json([i.to_dict() for i in infos])
            return
        if not infos:
            out.print("Nothing registered yet. Add a folder with `citedocs add PATH`.")
            return
        # Not a table: a table cuts or folds the path that `citedocs remove` needs to fit the terminal.
        for i in infos:
            where = i.uri if i.kind == "folder" else f"{i.name} {i.uri}"
            out.print(f"{i.kind} [bold]{escape(one_line(where))}[/bold]", overflow="ignore", crop=False)
            out.print(f"  {i.docs} docs · {i.chunks} chunks · {i.failed} failed · {i.status}")


@app.command()
def reindex(
    target: Annotated[str | None, typer.Argument(help="One folder or site (default: all folders).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Rebuild even unchanged files.")] = False,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Index new and changed files, purge deleted ones."""
    with service(db) as app_:
        index_and_report(app_, target, force, as_json)


@app.command()
def embed(
    db: DbOption = None,
    detached: Annotated[
        bool,
        typer.Option(
            "--detached", help="Leave the work to an embedder already running (how `add` starts one)."
        ),
    ] = False,
) -> None:
    """Embed the passages that lack a vector (what `citedocs add` starts in the background); if an embedder
    already runs on this index, wait for it, then embed what is left."""
    with service(db) as app_:
        embed_and_report(app_, wait=not detached)


@app.command()
def status(db: DbOption = None, as_json: JsonOption = False) -> None:
    """Index totals, background jobs and failed files; the embedder and model of the `citedocs serve` running on
    this index, asked from it, else those this command's settings would use."""
    from citedocs.cli import remote

    with service(db, create=False) as app_:
        data = run(app_.status)
        postgres = app_.settings.db.startswith(("postgresql://", "postgres://"))
        sqlite = None if postgres else app_.settings.db_path.resolve()
        server = remote.server_status(sqlite)
        from citedocs.index.background import background_embedder

        embedding = background_embedder(app_.store)
        data["embedding"] = None if embedding is None else {"pid": embedding.pid, "log": embedding.log}
        if server is not None:
            data["server"] = {"url": server["url"], "pid": server["pid"]}
            data["embedder"], data["llm"] = server["embedder"], server["llm"]
        else:
            from citedocs.llm.model import configured_llm  # settings only: no client, no server

            data["server"] = None
            data["llm"] = configured_llm(app_.settings)
        if as_json:
            print_json(data)
            return
        t = data["totals"]
        links = f", {t['links']} site pages not fetched yet" if t.get("links") else ""
        out.print(
            f"index {data['db']}: {t['indexed']} documents, {t['chunks']} chunks, {t['failed']} failed{links}"
        )
        if server is not None:
            out.print(
                f"server: {server['url']} (pid {server['pid']}) serves this index; its embedder and model:"
            )
        out.print(_embedder_line(data["embedder"]))
        if embedding is not None:
            who = f"pid {embedding.pid}" if embedding.pid else "another process"
            out.print(f"embedding: running in the background ({who}); log {escape(one_line(embedding.log))}")
        out.print(_llm_line(data["llm"]) if server is None else _served_llm_line(data["llm"]))
        for job in data["jobs"][:3]:
            out.print(
                f"  job {job['id']} {job['kind']} {job['state']}: {job['done']}/{job['total']} {job['message'] or ''}"
            )
        ocr = data["ocr"]
        if ocr["enabled"] or ocr["pending"]:
            state = "on" if ocr["enabled"] else "off"
            out.print(
                f"OCR: {state} ({ocr['languages']}), {ocr['pending']} scanned PDFs waiting, "
                f"{len(ocr['ocred'])} OCRed" + (f"; {ocr['problem']}" if ocr["problem"] else "")
            )
        for f in data["failures"][:20]:
            out.print(
                f"  [yellow]failed[/yellow] {escape(one_line(f['path']))}: {escape(one_line(f['reason']))}"
            )
        for watched in data.get("watch", []):
            out.print(escape(shown(_watch_line(watched))), soft_wrap=True)


def _watch_line(w: dict[str, Any]) -> str:
    """One folder's watcher: its state, why, who watches it, and the last change it applied."""
    line = f"watch {w['path']}: {w['state']}"
    if w["state"] in ("watching", "polling", "standby") and not w.get("here") and w.get("pid"):
        line += f" (by pid {w['pid']} on {w.get('host') or 'this machine'})"
    if w.get("reason"):
        line += f" - {w['reason']}"
    last = w.get("last_change")
    if last:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(last["time"]))
        what = "rescan" if last.get("rescan") else f"{last['paths']} path{'s' if last['paths'] != 1 else ''}"
        line += f"; last change {when}: {what}, {last['indexed']} indexed, {last['removed']} removed"
    return line


def _embedder_line(embedder: dict[str, Any]) -> str:
    if embedder.get("name") is None:
        return "embedder: none (CITEDOCS_EMBEDDER=none): keyword search only"
    return (
        f"embedder: {embedder['name']} ({embedder['state']}), "
        f"{embedder['vectors']}/{embedder['chunks']} chunks embedded"
    )


def _served_llm_line(llm: dict[str, Any]) -> str:
    """The running server's model, as its `GET /status` describes it."""
    if not llm.get("configured"):
        return "LLM: none configured on the server; search works (for answers see docs/models.md)"
    where = f" at {llm['base_url']}" if llm.get("base_url") else ""
    reachable = (
        "" if llm.get("reachable") is None else (", reachable" if llm["reachable"] else ", not reachable")
    )
    problem = f" ({llm['error']})" if llm.get("error") else ""
    line = f"LLM: {llm.get('model') or 'local'}{where} ({llm.get('state')}{reachable}){problem}"
    return line + _server_note(llm)


def _server_note(llm: dict[str, Any]) -> str:
    """Which llama.cpp server answers, and a faster one being built (with its progress)."""
    note = f"; {llm['server_kind']} llama-server" if llm.get("server_kind") else ""
    building = llm.get("building")
    if building:
        done = f", {building['percent']}%" if building.get("percent") is not None else ""
        note += f"; a native llama-server is being built (pid {building['pid']}{done}), answers move to it when ready"
    return note


def _llm_line(llm: dict[str, Any]) -> str:
    if llm["configured"] and not llm["can_answer"]:
        return f"LLM: cannot answer: {llm['problem']} {llm['next_step']}"
    if llm["kind"] == "external":
        return f"LLM: {llm['base_url']} (model {llm['model']!r})"
    if llm["kind"] == "installed":
        return (
            f"LLM: installed model {llm['model']} ({llm['gguf']}) through {llm['llama_server']} "
            "(started by `citedocs serve`, `ask` and `mcp`)" + _server_note(llm)
        )
    if llm["kind"] == "gguf":
        return f"LLM: {llm['gguf']} through {llm['llama_server']} (started by `citedocs serve` and `citedocs ask`)"
    return f"LLM: none configured; search works; for answers: {llm['next_step']} (docs/models.md)"


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    k: Annotated[
        int | None, typer.Option("-k", "--top-k", help="Number of results (1-50; default CITEDOCS_TOP_K).")
    ] = None,
    mode: Annotated[str | None, typer.Option("--mode", help="keyword | semantic | hybrid")] = None,
    source: Annotated[
        str | None, typer.Option("--folder", "--source", help="Limit to one folder or site.")
    ] = None,
    file_type: Annotated[
        str | None, typer.Option("--type", help="Limit to a format: md, pdf, docx, …")
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Search the index; `--json` prints the object POST /search returns (query, mode, note, hits).

    A `citedocs serve` running on the same index answers it (its model is warm); otherwise this process searches,
    by keyword unless `--mode` asks for more (loading the embedding model for one query costs seconds). A passage
    that repeats a better-ranked one is left out for the next one (PASSAGE_OVERLAP, search/distinct.py)."""
    from citedocs.search.engine import EMPTY_INDEX_NOTE

    remote = _search_remote(db, query, k, mode, source, file_type)
    if remote is not None:
        if as_json:
            print_json(remote)
            return
        _print_hits(remote.get("note"), remote["hits"], EMPTY_INDEX_NOTE)
        return
    with service(db, create=False) as app_:
        searched, one_off = one_off_mode(mode, app_.embedder is not None)
        result = run(
            lambda: app_.search(
                query,
                k=k,
                mode=searched,
                source=source,
                file_type=file_type,
                wait_for_model=True,
                distinct=True,
            )
        )
        if one_off and result.hits:
            result.note = with_one_off_note(result.note)
        found = result.to_dict()  # the same object as the HTTP API's /search
        if as_json:
            print_json(found)
            return
        if not result.hits and not run(app_.list_sources):
            out.print(NOTHING_REGISTERED)
            return
        _print_hits(result.note, found["hits"], EMPTY_INDEX_NOTE)


def _search_remote(
    db: str | None, query: str, k: int | None, mode: str | None, source: str | None, file_type: str | None
) -> dict[str, Any] | None:
    """The running server's answer (its /search object), or None to search here; its errors end the command.

    `main` already tried this before importing the CLI (`fast.py`); it gets here when the index path needed the
    full settings (a `.env` or config file) or the server found no hits (the message below knows why)."""
    from citedocs.cli import remote

    settings = settings_for(db)
    if settings.db.startswith(("postgresql://", "postgres://")):
        return None
    payload = {
        "query": query,
        "k": settings.top_k if k is None else k,
        "mode": mode,
        "source": source,
        "file_type": file_type,
    }
    reply = remote.search(settings.db_path.resolve(), payload)
    if reply is None:
        return None
    if reply.error is not None:
        console.print(
            f"[red]error:[/red] {escape(reply.error.get('message', ''))} {escape(reply.error.get('hint', ''))}"
        )
        raise typer.Exit(remote.exit_code(reply.status))
    return reply.body


class _Highlighted(Style):
    """Hits as rich markup: what they show escaped, matched words highlighted."""

    def text(self, value: str) -> str:
        return escape(value)

    def strong(self, value: str) -> str:
        return f"[bold]{value}[/bold]"

    def dim(self, value: str) -> str:
        return f"[dim]{value}[/dim]"

    def snippet(self, value: str) -> str:
        return re.sub(r"\*\*(.+?)\*\*", r"[bold yellow]\1[/bold yellow]", escape(value))


def _print_hits(note: str | None, hits: list[dict[str, Any]], empty_index_note: str) -> None:
    if note:  # one line, as the fast path (cli/fast.py) writes it: a pipe gets the same bytes either way
        console.print(f"[dim]note: {escape(one_line(note))}[/dim]", soft_wrap=True)
    if not hits:
        out.print("No matches." if note != empty_index_note else NOTHING_INDEXED)
    for line in hit_lines(hits, _Highlighted()):
        out.print(line, overflow="ignore", crop=False)


@app.command()
def read(
    target: Annotated[str, typer.Argument(help="PATH or PATH:START-END (lines, 1-based).")],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print a file's text (extracted text for pdf/docx/html); only inside registered folders."""
    path, start, end = parse_read_target(target)
    with service(db, create=False) as app_:
        result = run(lambda: app_.read(path, start, end))
        if as_json:
            print_json(
                {
                    "path": result.path,
                    "start_line": result.start_line,
                    "end_line": result.end_line,
                    "total_lines": result.total_lines,
                    "text": result.text,
                }
            )
            return
        sys.stdout.write(shown(result.text) + "\n")


@app.command()
def ask(
    question: Annotated[str | None, typer.Argument(help="A question about your documents.")] = None,
    k: Annotated[int | None, typer.Option("-k", "--top-k", help="Sources to give the model (1-50).")] = None,
    mode: Annotated[str | None, typer.Option("--mode", help="keyword | semantic | hybrid")] = None,
    chat: Annotated[
        bool,
        typer.Option(
            "--chat", help="A conversation: ask follow-up questions, one a line; empty line or EOF ends."
        ),
    ] = False,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Answer from your documents with a local LLM; every citation is checked before it is shown.

    With `--chat`, questions are read one a line and each follow-up is answered with the conversation so far
    (docs/conversations.md); `--json` then prints one answer object a line."""
    if chat:
        from citedocs.cli.chat import run_chat

        with service(db, create=False) as app_:
            run_chat(app_, question, k=k, mode=mode, as_json=as_json)
        return
    if question is None:
        console.print("[red]error:[/red] no question.", highlight=False)
        console.print('  Run `citedocs ask "your question"`, or `citedocs ask --chat` for a conversation.')
        raise typer.Exit(2)

    from citedocs.cli.answers import ask_running_server, print_answer, show_event

    data = ask_running_server(
        db, question, k, mode
    )  # a `citedocs serve` on this index answers with its warm model
    if data is None:
        with service(db, create=False) as app_:
            data = run(lambda: app_.ask(question, k=k, mode=mode, on_event=None if as_json else show_event))
    if as_json:
        print_json(data)
        return
    print_answer(data)


def parse_read_target(target: str) -> tuple[str, int | None, int | None]:
    match = re.fullmatch(r"(.+?):(\d+)(?:-(\d+))?", target)
    if not match:
        return target, None, None
    start = int(match.group(2))
    end = int(match.group(3)) if match.group(3) else start
    return match.group(1), start, end


def _register_subcommands() -> None:
    from citedocs.cli.bench import bench_app
    from citedocs.cli.eval import eval_app
    from citedocs.cli.model import register as register_model
    from citedocs.cli.servers import register as register_servers
    from citedocs.cli.sites import register as register_sites
    from citedocs.cli.tokens import register as register_tokens

    register_servers(app)
    register_sites(app)
    register_model(app)
    register_tokens(app)
    app.add_typer(eval_app, name="eval")
    app.add_typer(bench_app, name="bench")


_register_subcommands()


def main() -> None:
    """Run the CLI; a usage error is one `error: ...` line and what to do, like every other error."""
    try:
        code = app(standalone_mode=False)
    except typer.TyperException as exc:  # typer's usage errors (its click exceptions) derive from it
        console.print(f"[red]error:[/red] {escape(shown(exc.format_message()))}", highlight=False)
        ctx = getattr(exc, "ctx", None)
        command = ctx.command_path if ctx is not None else "citedocs"
        console.print(f"  Run `{escape(command)} --help` to see how to call it.", highlight=False)
        sys.exit(exc.exit_code)
    except typer.Abort:
        console.print("[red]error:[/red] interrupted.", highlight=False)
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
