"""The search every front end runs: the sources the caller may see, the engine's ranking, the index's notes.

`Citedocs.search` calls it, and so does a one-off `citedocs search` that answers before Settings is built
(cli/fast.py): one copy of the filters, the name lookup and the notes, so the two cannot answer differently.
Nothing here needs Settings; the caller resolves `k` and owns the engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from citedocs import access
from citedocs.errors import NotFoundError
from citedocs.index.reanalysis import STALE_NOTE, needs_reanalysis
from citedocs.search.distinct import PASSAGE_OVERLAP
from citedocs.search.engine import SearchEngine, SearchResult
from citedocs.store import Source, Store

__all__ = ["find_source", "search_sources", "visible", "visible_ids"]


def find_source(store: Store, name_or_path: str) -> Source:
    """A registered folder or site by name or path; one the caller may not see is an unknown one."""
    source = store.find_source(name_or_path)
    if source is None:
        try:
            resolved = str(Path(name_or_path).expanduser().resolve())
        except (OSError, RuntimeError):
            resolved = name_or_path
        source = store.find_source(resolved)
    if source is None or not access.current().sees(source.name):
        raise NotFoundError(
            f"{name_or_path} is not a registered folder or site.",
            "Run `citedocs list` to see what is registered.",
        )
    return source


def visible(sources: Sequence[Source]) -> list[Source]:
    """The sources the current principal may see (all of them for local use)."""
    who = access.current()
    return list(sources) if who.sources is None else [s for s in sources if who.sees(s.name)]


def visible_ids(store: Store) -> list[int] | None:
    """The ids of the sources the caller may see; None (no filter) when it sees them all."""
    if access.current().sources is None:
        return None
    return [s.id for s in visible(store.list_sources())]


def search_sources(
    store: Store,
    engine: SearchEngine,
    query: str,
    *,
    k: int,
    mode: str | None = None,
    source: str | None = None,
    file_type: str | None = None,
    wait_for_model: bool = False,
    distinct: bool = False,
) -> SearchResult:
    """`Citedocs.search` once the site link documents are in place (sites/links.py)."""
    source_ids = [find_source(store, source).id] if source else visible_ids(store)
    if source_ids == []:  # a token that sees no source finds nothing (an empty filter is not "all")
        return SearchResult(query=query, mode=mode or engine.default_mode, hits=[])
    result = engine.search(
        query,
        k=k,
        mode=mode,
        source_ids=source_ids,
        file_type=file_type,
        wait_for_model=wait_for_model,
        overlap=PASSAGE_OVERLAP if distinct else 0.0,
    )
    if access.current().sources is not None:  # link documents of unseen sites, had any slipped through
        result.hits = [h for h in result.hits if access.current().sees(h.source)]
    access.note(query, (h.source for h in result.hits))
    if needs_reanalysis(store):
        result.note = f"{result.note} {STALE_NOTE}" if result.note else STALE_NOTE
    return result
