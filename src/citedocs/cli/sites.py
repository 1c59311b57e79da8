"""`citedocs add-site / sites / refresh / fetch`: thin commands over Citedocs.sites."""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from citedocs.cli.common import DbOption, JsonOption, out, print_json, run, service

if TYPE_CHECKING:
    from citedocs.sites.model import SiteInfo
    from citedocs.sites.service import SiteService


@contextmanager
def site_service(db: str | None) -> Iterator[SiteService]:
    """The facade's SiteService; closed with the facade."""
    with service(db) as app_:
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


def add_site(
    name: Annotated[str, typer.Argument(help="Short name for the site, e.g. 'hono'.")],
    url: Annotated[str, typer.Argument(help="The site's llms.txt (or llms-full.txt) URL.")],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Register a documentation site by its llms.txt and index the pages it lists."""
    with site_service(db) as sites_:
        info = run(lambda: sites_.add(name, url))
        if as_json:
            print_json(info.to_dict())
        else:
            _print_info("added", info)


def sites(db: DbOption = None, as_json: JsonOption = False) -> None:
    """List documentation sites with their page counts, status and last error."""
    with site_service(db) as sites_:
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
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Re-read a site's llms.txt and its stored pages (conditional requests; unchanged pages stay)."""
    with site_service(db) as sites_:
        info = run(lambda: sites_.refresh(name))
        if as_json:
            print_json(info.to_dict())
        else:
            _print_info("refreshed", info)


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
    with site_service(db) as sites_:
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
