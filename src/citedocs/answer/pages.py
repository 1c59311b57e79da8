"""Site pages an answer needs: which unfetched pages to read before answering, and the outcome of each fetch.

A documentation site's pages are listed (title, description) before anyone fetches them; a question whose
best candidates are such links is answered from the pages themselves, fetched at the start of the answer.
The budget (Settings.ask_fetch_pages, default 5, as many as the passages an answer cites) is fetched side by
side within a deadline (ASK_FETCH_TIMEOUT_S in answer/service.py). On the Claude docs served as a site, 5 pages
put a right page in the sources of 43 of 60 questions against 38 with 3 and 30 with 1, at the same first-answer latency on
loopback (bench/bench_sites_ask.py). A page that fails or misses the deadline is reported as an event; the
answer goes on from what is there.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol, runtime_checkable

from citedocs.hits import Hit

__all__ = ["PageFetch", "PageFetcher", "links_to_fetch"]


@dataclass(frozen=True, slots=True)
class PageFetch:
    """How fetching one page went: `chunks` it added to the index, or the error and what to do."""

    url: str
    ok: bool
    ms: float
    chunks: int = 0
    error: str | None = None
    hint: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@runtime_checkable
class PageFetcher(Protocol):
    """A retriever that can fetch and index site pages (this process's index can; a remote MCP server not)."""

    def fetch_pages(self, urls: Sequence[str], timeout_s: float) -> AsyncIterator[PageFetch]: ...


def links_to_fetch(hits: Sequence[Hit], k: int, budget: int) -> list[str]:
    """The unfetched pages among the first `k` candidates, best first, at most `budget` of them."""
    urls = [h.path for h in hits[:k] if h.kind == "link"]
    return list(dict.fromkeys(urls))[: max(0, budget)]
