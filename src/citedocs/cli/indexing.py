"""What `add`, `reindex` and `embed` print while they index, OCR and embed: progress bars, then one line each.

`add` returns once keyword search works: the embedding runs in a detached `citedocs embed` (index/background.py)
unless `--wait` asks for it here, as `reindex` and `embed` always do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from citedocs.cli.common import console, out, print_json, run
from citedocs.cli.terminal import one_line

if TYPE_CHECKING:
    from citedocs.index.embedding import EmbedProgress
    from citedocs.index.folders import IndexProgress
    from citedocs.service import Citedocs

__all__ = ["embed_and_report", "index_and_report"]


def _progress_bar(label: str) -> tuple[Progress, Callable[[IndexProgress], None]]:
    bar = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[current]}"),
        console=console,
        transient=True,
    )
    task = bar.add_task(label, total=None, current="")

    def update(p: IndexProgress) -> None:
        bar.update(task, total=p.total or None, completed=p.done, current=(p.current or "")[-50:])

    return bar, update


def index_and_report(
    app_: Citedocs, name: str | None, force: bool, as_json: bool, *, background: bool = False
) -> None:
    """Index (one source, or every folder), then embed: here, or with `background` in a detached process
    when the index can (a SQLite file), so the command returns as soon as keyword search works."""
    bar, update = _progress_bar("indexing")
    with bar:
        reports = run(lambda: app_.index(name, force=force, progress=update))
    if not as_json:  # indexing ran first, so its lines come first
        _print_index_reports(reports)
    started = background and _embed_in_background(app_, name, as_json)
    if not started:
        embed_and_report(app_, force=force, as_json=as_json)
    _ocr_and_report(app_, as_json, background=started)
    if as_json:
        print_json(
            [
                {
                    "source": r.source,
                    "total": r.total,
                    "indexed": r.indexed,
                    "unchanged": r.unchanged,
                    "failed": r.failed,
                    "removed": r.removed,
                    "ocr_pending": r.ocr_pending,
                    "seconds": round(r.seconds, 3),
                    "failures": [{"path": p, "reason": why} for p, why in r.failures],
                }
                for r in reports
            ]
        )


def _embed_in_background(app_: Citedocs, name: str | None, as_json: bool) -> bool:
    """Hand the embedding to a `citedocs serve` running on the index, else start (or leave to the one running)
    the background embedder; False when it must run here."""
    from citedocs.cli import remote
    from citedocs.index.background import start_embedder

    if app_.embedder is None:
        return True  # keyword-only: nothing to embed anywhere
    have, total = app_.store.vector_counts()
    if have >= total:
        return True
    sqlite = not app_.settings.db.startswith(("postgresql://", "postgres://"))
    server = remote.embed_on_server(app_.settings.db_path.resolve(), name) if sqlite and name else None
    if server is not None:
        if not as_json:
            out.print(
                f"embedding {total - have} passages on the running server ({escape(server)}; its model is warm). "
                "Keyword search works now; `citedocs status` shows the progress."
            )
        return True
    embedder = start_embedder(app_.store, str(app_.settings.db_path.resolve()))
    if embedder is None:
        return False
    if not as_json:
        who = f"pid {embedder.pid}" if embedder.pid else "another process"
        out.print(
            f"embedding {total - have} passages in the background ({who}; log {escape(one_line(embedder.log))}). "
            "Keyword search works now; `citedocs status` shows the progress, `citedocs embed` waits for it."
        )
    return True


def embed_and_report(
    app_: Citedocs, *, force: bool = False, as_json: bool = False, wait: bool = True
) -> None:
    """Embed what lacks a vector here, as the one embedder of the index (waiting for one running elsewhere,
    unless `wait` is False: then an embedder running elsewhere is left to it)."""
    from citedocs.index.background import background_embedder, embed_until_done

    if app_.embedder is None:
        return
    running = background_embedder(app_.store) if wait else None
    if running is not None and not as_json:
        who = f"pid {running.pid}" if running.pid else "another process"
        console.print(f"[dim]waiting for the embedder already running on this index ({who}) …[/dim]")
    ebar = Progress(
        TextColumn("[bold]embedding"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
    task = ebar.add_task("embedding", total=None)
    forced = [force]  # the index is cleared once, on the first pass only

    def embed() -> EmbedProgress | None:
        first = forced.pop() if forced else False
        return app_.embed(force=first, progress=lambda p: ebar.update(task, total=p.total, completed=p.done))

    with ebar:
        embedded = run(lambda: embed_until_done(app_.store, embed, wait=wait))
    if embedded is not None and not as_json:
        out.print(
            f"embeddings: {embedded.embedded} chunks embedded in {embedded.seconds:.1f} s "
            f"({embedded.done}/{embedded.total} have vectors)"
        )


def _ocr_and_report(app_: Citedocs, as_json: bool, *, background: bool = False) -> None:
    """With CITEDOCS_OCR on, the scanned PDFs set aside by indexing are OCRed here (then embedded: in the
    background when indexing's embedding went there)."""
    bar = Progress(
        TextColumn("[bold]OCR"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[current]}"),
        console=console,
        transient=True,
    )
    task = bar.add_task("OCR", total=None, current="")
    with bar:
        state = run(
            lambda: app_.ocr(
                progress=lambda p: bar.update(
                    task, total=p.total, completed=p.done, current=(p.current or "")[-50:]
                )
            )
        )
    if state is None or not state.total:
        return
    ocred = app_.embedder is not None and state.ocred
    if ocred and not (background and _embed_in_background(app_, None, as_json=True)):
        embed_and_report(app_, as_json=True)
    if not as_json:
        out.print(
            f"OCR: {state.ocred} scanned PDFs read ({state.pages} pages), {state.failed} failed, "
            f"in {state.seconds:.1f} s"
        )
        for path, why in state.failures[:20]:
            out.print(f"  [yellow]failed[/yellow] {escape(one_line(path))}: {escape(one_line(why))}")


def _print_index_reports(reports: list[Any]) -> None:
    for r in reports:
        out.print(
            f"[bold]{escape(one_line(r.source))}[/bold]: {r.total} files — {r.indexed} indexed, {r.unchanged} unchanged, "
            f"{r.failed} failed, {r.removed} removed in {r.seconds:.2f} s"
            + (f", {r.ocr_pending} scanned PDFs waiting for OCR" if r.ocr_pending else "")
        )
        for path, why in r.failures[:20]:
            out.print(f"  [yellow]failed[/yellow] {escape(one_line(path))}: {escape(one_line(why))}")
        if len(r.failures) > 20:
            out.print(f"  … and {len(r.failures) - 20} more (see `citedocs status --json`)")
