"""`citedocs add-site / sites / refresh / fetch`: thin commands over Citedocs.sites."""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from citedocs.cli.common import DbOption, JsonOption, console, out, print_json, run, service

if TYPE_CHECKING:
    from citedocs.service import Citedocs
    from citedocs.sites.model import SiteInfo
    from citedocs.sites.service import SiteService


@contextmanager
def site_service(db: str | None, *, create: bool = True) -> Iterator[SiteService]:
    """The facade's SiteService; closed with the facade."""
    with service(db, create=create) as app_:
        yield app_.sites


def _when(epoch: float | None) -> str:
    if epoch is None:
        return "never"
    return dt.datetime.fromtimestamp(epoch).strftime("%Y-%m-%d %H:%M")


def _print_info(verb: str, info: SiteInfo) -> None:
    out.print(
        f"{verb} [bold]{info.name}[/bold] ({info.url}): {info.docs} docs, {info.pages_fetched} pages stored, "
        f"{info.chunks} chunks"
    )
    if info.changes:
        out.print("  " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in info.changes.items()))


FetchOption = Annotated[
    str | None,
    typer.Option(
        "--fetch",
        help="Also fetch the listed pages now: 'all', a number N (the first N not fetched yet) or 'none'. "
        "Stopping is safe: the same command resumes. Without it, add-site fetches a site of 200 pages or fewer "
        "whole (politely, one page at a time) and leaves a larger one's pages until a question needs them.",
    ),
]


def _fetch_limit(value: str | None) -> int | bool | None:
    """--fetch: False (not asked, or 'none'), None (all) or a count."""
    if value is None or value.strip().lower() == "none":
        return False
    if value.strip().lower() == "all":
        return None
    if value.strip().isdigit():
        return int(value)
    raise typer.BadParameter(
        f"expected 'all' or a number of pages (or 'none'), got {value!r}", param_hint="--fetch"
    )


def _prefetch(
    app_: Citedocs, name: str, limit: int | None, as_json: bool, min_interval_s: float = 0.0
) -> dict[str, Any]:
    """Fetch pages with a progress bar (on stderr), then embed them; returns the run's counts."""
    with Progress(
        TextColumn("fetching pages of " + escape(name)),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[failed]} failed"),
        TimeElapsedColumn(),
        console=console,
        disable=as_json or not console.is_terminal,
    ) as bar:
        task = bar.add_task("fetch", total=None, failed=0)

        def show(state: Any) -> None:
            bar.update(task, total=state.total, completed=state.done + state.failed, failed=state.failed)

        try:
            state = run(lambda: app_.prefetch_site(name, limit, progress=show, min_interval_s=min_interval_s))
        except KeyboardInterrupt:
            console.print(f"stopped; run `citedocs refresh {name} --fetch all` to go on from here.")
            raise typer.Exit(130) from None
    embedded = app_.embed()
    data: dict[str, Any] = state.to_dict()
    data["embedded"] = None if embedded is None else embedded.done
    if not as_json:
        extra = []
        if state.failed:
            extra.append(f"{state.failed} failed")
        if state.skipped:
            extra.append(f"{state.skipped} refused by robots.txt")
        if state.delay_s:
            extra.append(f"{state.delay_s:g} s apart")
        out.print(
            f"fetched {state.done} of {state.total} pages" + (f" ({', '.join(extra)})" if extra else "")
        )
        for error in state.errors[:5]:
            out.print(f"  [yellow]{escape(error['url'])}: {escape(error['error'])}[/yellow]")
    return data


def add_site(
    name: Annotated[str, typer.Argument(help="Short name for the site, e.g. 'hono'.")],
    url: Annotated[str, typer.Argument(help="The site's llms.txt (or llms-full.txt) URL.")],
    fetch: FetchOption = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Register a documentation site by its llms.txt; its pages are searchable by title at once."""
    from citedocs.sites.prefetch import AUTO_FETCH_INTERVAL_S, SMALL_SITE_PAGES, not_fetched_note

    limit = _fetch_limit(fetch)
    interval = 0.0
    with service(db) as app_:
        info = run(lambda: app_.sites.add(name, url))
        if fetch is None and info.docs <= SMALL_SITE_PAGES:
            limit, interval = None, AUTO_FETCH_INTERVAL_S  # a small site: fetched whole, politely
        if not as_json:
            _print_info("added", info)
            if limit is False:
                out.print("  " + not_fetched_note(info.name, info.docs, info.pages_fetched))
        fetched = None if limit is False else _prefetch(app_, info.name, limit, as_json, interval)
        if as_json:
            print_json({**info.to_dict(), **({"fetch": fetched} if fetched is not None else {})})


def sites(db: DbOption = None, as_json: JsonOption = False) -> None:
    """List documentation sites with their page counts, status and last error."""
    with site_service(db, create=False) as sites_:
        infos = run(lambda: sites_.list())
        if as_json:
            print_json([i.to_dict() for i in infos])
            return
        if not infos:
            out.print("No documentation sites yet. Add one with `citedocs add-site NAME LLMS_TXT_URL`.")
            return
        # Not a table: a table cuts or folds the URL to fit the terminal, and the name `remove` needs with it.
        for i in infos:
            out.print(f"[bold]{escape(i.name)}[/bold] {escape(i.url)}", overflow="ignore", crop=False)
            line = f"  {i.docs} docs · {i.pages_fetched} pages · {i.status} · refreshed {_when(i.last_refreshed)}"
            out.print(line + (f" · last error: {escape(i.last_error)}" if i.last_error else ""))


def refresh(
    name: Annotated[str, typer.Argument(help="A registered site name.")],
    fetch: FetchOption = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Re-read a site's llms.txt and its stored pages (conditional requests; unchanged pages stay)."""
    limit = _fetch_limit(fetch)
    with service(db) as app_:
        info = run(lambda: app_.sites.refresh(name))
        if not as_json:
            _print_info("refreshed", info)
        fetched = None if limit is False else _prefetch(app_, info.name, limit, as_json)
        if as_json:
            print_json({**info.to_dict(), **({"fetch": fetched} if fetched is not None else {})})


def fetch(
    url: Annotated[str, typer.Argument(help="A page URL listed by a registered llms.txt.")],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print a documentation page as markdown (only pages of registered sites)."""
    with site_service(db) as sites_:
        page = run(lambda: sites_.fetch(url))
        if as_json:
            print_json(page.to_dict())
            return
        sys.stdout.write(page.markdown if page.markdown.endswith("\n") else page.markdown + "\n")


def search_docs(
    query: Annotated[
        str, typer.Argument(help="What to look for in the sites' page titles and descriptions.")
    ],
    source: Annotated[str | None, typer.Option("--source", help="Limit to one site.")] = None,
    k: Annotated[int, typer.Option("-k", help="Number of results (1-50).")] = 5,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Ranked search over the pages that registered llms.txt files list (scores 0-1, comparable across sites)."""
    with site_service(db, create=False) as sites_:
        hits = run(lambda: sites_.search(query, source=source, k=k))
        if as_json:
            print_json([h.to_dict() for h in hits])
            return
        if not hits:
            out.print("No matches.")
        for n, hit in enumerate(hits, 1):
            out.print(
                f"[bold]{n}. {hit.title}[/bold]  [dim]{hit.source} · {hit.score:.2f}[/dim]\n   {hit.url}"
            )
            if hit.snippet:
                out.print("   " + hit.snippet.replace("[", r"\["))


def register(app: typer.Typer) -> None:
    """Add the site commands to the `citedocs` app."""
    app.command("add-site")(add_site)
    app.command("sites")(sites)
    app.command("refresh")(refresh)
    app.command("fetch")(fetch)
    app.command("search-docs")(search_docs)
