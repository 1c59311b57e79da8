"""llms.txt documentation sites: a persisted registry, ranked search over what each llms.txt lists, and
confined page fetches whose text joins the main index.

A site's links are stored in SQLite and ranked in memory by SiteIndex, built lazily per site on first use
and rebuilt when another process changes the links (a revision number per site). Pages are fetched only
when asked for, converted to markdown, kept in an LRU cache, stored with their ETag / Last-Modified so a
refresh re-downloads only what changed, and chunked into the main index so `search` and `ask` see them.
"""

from __future__ import annotations

import builtins
import re
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import astuple, replace
from typing import Any

from citedocs import access
from citedocs.errors import CitedocsError, FetchError, InputError, NotFoundError
from citedocs.hits import LINK_FORMAT
from citedocs.settings import Settings
from citedocs.sites.links import sync_links
from citedocs.sites.model import (
    DEFAULT_SITES,
    FAILURE_BACKOFF_S,
    FetchedPage,
    SiteHit,
    SiteInfo,
    inline_page_urls,
    sha256_bytes,
    sha256_text,
)
from citedocs.sites.pages import SitePages
from citedocs.sites.prefetch import PrefetchProgress, Robots, pages_to_fetch, prefetch, read_robots
from citedocs.sites.rank import MAX_K, SiteIndex
from citedocs.sources.fetch import FetchResult, GuardedFetcher
from citedocs.sources.llmstxt import DocLink, LlmsTxt, parse_llms_txt
from citedocs.sources.ssrf import check_url, within_prefix
from citedocs.store import Source, Store
from citedocs.store.site_tables import SiteState, SiteTables, StoredPage

__all__ = ["FetchedPage", "SiteHit", "SiteInfo", "SiteService"]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_SEEDED_KEY = "default_sites_seeded"


class SiteService:
    """The registry of llms.txt sites in one index; safe to share between threads."""

    def __init__(
        self,
        store: Store,
        settings: Settings,
        *,
        fetcher: GuardedFetcher | None = None,
        clock: Callable[[], float] = time.time,
        defaults: Sequence[tuple[str, str]] = DEFAULT_SITES,
    ) -> None:
        self.store = store
        self.settings = settings
        self.tables = SiteTables(store)
        self.index = SiteIndex()
        self._fetcher = fetcher
        self._owns_fetcher = fetcher is None
        self._clock = clock
        self._defaults = tuple(defaults)
        self.pages = SitePages(store, settings, lambda: self.fetcher, clock, self._page_text)
        self._indexed: dict[str, tuple[int, int]] = {}  # name -> (source id, links revision) in self.index
        self._lock = threading.RLock()
        self._seeded = False

    @property
    def fetcher(self) -> GuardedFetcher:
        with self._lock:
            if self._fetcher is None:
                self._fetcher = GuardedFetcher.from_settings(self.settings)
            return self._fetcher

    def close(self) -> None:
        if self._owns_fetcher and self._fetcher is not None:
            self._fetcher.close()
            self._fetcher = None

    # -- registry ---------------------------------------------------------------------------------
    def add(self, name: str, llms_txt_url: str) -> SiteInfo:
        """Fetch and parse a site's llms.txt, then register it; nothing is kept if any step fails."""
        name = name.strip()
        if not _NAME.match(name):
            raise InputError(
                f"{name!r} is not a usable site name.",
                "Use letters, digits, '.', '_' or '-' (at most 64), e.g. 'hono' or 'aws-bedrock'.",
            )
        self._seed_defaults()
        target = check_url(llms_txt_url.strip(), self.settings.allowed_private_hosts).url
        if self.store.find_source(name) is not None:
            raise InputError(
                f"A source named '{name}' is already registered.",
                f"Pick another name, or run `citedocs refresh {name}` to re-read it.",
            )
        self._refuse_known_url(target)
        result = self.fetcher.fetch(target)
        parsed = self._parse(result)
        if result.url != target:
            self._refuse_known_url(result.url)
        options = {"requested_url": target} if result.url != target else {}
        source = self.store.add_source("site", name, result.url, options)
        try:
            with self._lock:
                self._store_llms_txt(source, result, parsed)
        except BaseException:
            self.store.remove_source(source.id)
            raise
        return self._info(self._site(name))

    def remove(self, name: str) -> SiteInfo:
        """Unregister a site; its links, pages, documents and chunks go with it (one cascading delete)."""
        source = self._site(name)
        info = self._info(source)
        self.store.remove_source(source.id)
        with self._lock:
            self.index.remove_source(source.name)
            self._indexed.pop(source.name, None)
        self.pages.cache.drop(source=source.name)
        return info

    def refresh(self, name: str) -> SiteInfo:
        """Re-read the llms.txt and every stored page with conditional requests; retries at once even
        while a recent failure would make searches skip the site."""
        source = self._site(name)
        state = self.tables.state(source.id)
        known = state.fetched_at is not None
        try:
            result = self.fetcher.fetch(
                source.uri,
                etag=state.etag if known else None,
                last_modified=state.last_modified if known else None,
            )
            unchanged = result.not_modified or (known and sha256_bytes(result.content) == state.sha256)
            with self._lock:
                if unchanged:
                    self.tables.record_fetch(
                        source.id,
                        etag=result.etag or state.etag,
                        last_modified=result.last_modified or state.last_modified,
                        sha256=state.sha256,
                        fetched_at=self._clock(),
                        links=None,
                    )
                else:
                    self._store_llms_txt(source, result, self._parse(result))
        except CitedocsError as exc:
            self._fail(source, exc)
            raise
        changes = self.pages.revalidate(source)
        changes["llms_txt_changed"] = int(not unchanged)
        sync_links(self.store, source, self.tables.links(source.id), self.tables.page_urls(source.id))
        self.store.update_source(source.id, status="ready", last_error=None, last_indexed=self._clock())
        return replace(self._info(self._site(name)), changes=changes)

    def list(self) -> list[SiteInfo]:
        self._seed_defaults()
        counts = self.tables.counts()
        who = access.current()
        return [self._info(s, counts) for s in self.store.list_sources("site") if who.sees(s.name)]

    def home(self) -> dict[str, Any]:
        """What an agent reads first: the sites and how to search and read them."""
        return {
            "purpose": "Ranked search over the pages that registered documentation sites list in their "
            "llms.txt. Titles and descriptions are indexed; a page's full text is fetched when you "
            "open it, and is then also searchable.",
            "sources": [s.to_dict() for s in self.list()],
            "how_to": [
                "search_docs(query, source?, k) ranks pages of all sites, or of one; scores are 0-1 and "
                "comparable across sites.",
                "fetch_doc(url) reads a result as markdown (only URLs a registered llms.txt lists, or under "
                "its directory).",
                "list_doc_sources() shows each site's status and last error.",
                "add_doc_source(name, llms_txt_url), refresh_doc_source(name), remove_doc_source(name) "
                "manage the sites.",
                "Cite the page URL; pages are live documentation and may change.",
            ],
        }

    # -- search -----------------------------------------------------------------------------------
    def search(self, query: str, *, source: str | None = None, k: int = 5) -> builtins.list[SiteHit]:
        """The k best pages (all sites, or one) for `query`, one hit per URL, best first."""
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
            raise InputError(
                f"k must be between 1 and {MAX_K}, got {k!r}.", f"Ask for at most {MAX_K} results."
            )
        if not query.strip():
            raise InputError("The query is empty.", "Type some words to search for.")
        who = access.current()
        if source is not None and not who.sees(source):
            self._site(source)  # refused exactly as an unknown site is
        self._sync(source)
        if not self._indexed:
            return []
        hits: builtins.list[SiteHit] = []
        seen: set[str] = set()
        for hit in self.index.search(query, source=source, k=min(MAX_K, 2 * k)):
            if hit.url not in seen and len(hits) < k and who.sees(hit.source):
                seen.add(hit.url)
                hits.append(SiteHit(*astuple(hit)))
        return hits

    # -- pages ------------------------------------------------------------------------------------
    def fetch(self, url: str) -> FetchedPage:
        """A page as markdown, if a registered llms.txt lists it or it lies under a site's directory."""
        self._seed_defaults()
        page = self.pages.fetch(url)
        if not access.current().sees(page.source):
            raise NotFoundError(
                f"{url} is not a page of a registered site.", "Run search_docs to find pages."
            )
        return page

    def prefetch(
        self,
        name: str,
        limit: int | None = None,
        *,
        progress: Callable[[PrefetchProgress], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
        min_interval_s: float = 0.0,
    ) -> PrefetchProgress:
        """Fetch up to `limit` (None: all) of the site's listed pages not stored yet, as a job `status` shows;
        requests start at least `min_interval_s` apart (one at a time) when that is above 0.

        Resumable by construction: what is left is read from the store, so a stopped run continues next time."""
        source = self._site(name)
        todo = pages_to_fetch(self.tables.links(source.id), set(self.tables.page_urls(source.id)), limit)
        robots = read_robots(self.fetcher, source.uri) if todo else Robots(None, 0.0)
        delay = max(robots.crawl_delay, min_interval_s)
        job = self.store.start_job(source.id, "fetch", len(todo))

        def report(state: PrefetchProgress) -> None:
            self.store.update_job(job, done=state.done, failed=state.failed, current=state.current)
            if progress is not None:
                progress(state)

        try:
            state = prefetch(
                source.name,
                todo,
                self.pages.fetch,
                concurrency=self.settings.site_fetch_concurrency,
                delay_s=delay,
                robots=robots,
                progress=report,
                should_stop=should_stop,
            )
        except BaseException as exc:
            self.store.update_job(job, state="failed", message=str(exc)[:500], finished=self._clock())
            raise
        message = f"{state.done} fetched, {state.failed} failed, {state.skipped} refused by robots.txt"
        self.store.update_job(
            job,
            state="interrupted" if state.stopped else "done",
            message=message,
            done=state.done,
            failed=state.failed,
            finished=self._clock(),
        )
        return state

    # -- internals --------------------------------------------------------------------------------
    def site(self, name: str) -> Source:
        """The registered site `name`, or NotFoundError saying how to list or add one."""
        return self._site(name)

    def _site(self, name: str) -> Source:
        source = self.store.find_source(name)
        if source is None or source.kind != "site" or not access.current().sees(source.name):
            raise NotFoundError(
                f"No documentation site named '{name}'.",
                "Run `citedocs sites` to see the registered sites, or `citedocs add-site NAME URL` to add one.",
            )
        return source

    def _refuse_known_url(self, url: str) -> None:
        for other in self.store.list_sources("site"):
            if url in (other.uri, other.options.get("requested_url")):
                raise InputError(
                    f"{url} is already registered as site '{other.name}'.",
                    f"Run `citedocs refresh {other.name}` to re-read it.",
                )

    def _seed_defaults(self) -> None:
        """Register the default sites once per index (never again after the user removes them)."""
        if self._seeded or not self.settings.default_sites:
            return
        with self._lock:
            self._seeded = True
            if self.store.get_meta(_SEEDED_KEY):
                return
            known = {s.name for s in self.store.list_sources()} | {
                s.uri for s in self.store.list_sources("site")
            }
            for name, url in self._defaults:
                if name not in known and url not in known:
                    source = self.store.add_source("site", name, url, {"default": True})
                    self.store.update_source(source.id, status="pending")
            self.store.set_meta(_SEEDED_KEY, "1")

    def _parse(self, result: FetchResult) -> LlmsTxt:
        parsed = parse_llms_txt(result.text(), result.url)
        if parsed.is_empty:
            raise InputError(
                f"{result.url} lists no links and inlines no pages, so there is nothing to search.",
                "Check that the URL is the site's llms.txt (or llms-full.txt), not its home page.",
            )
        return parsed

    def _store_llms_txt(self, source: Source, result: FetchResult, parsed: LlmsTxt) -> None:
        """Persist the links, store inlined pages without fetching them, drop pages that left the site."""
        now = self._clock()
        urls = inline_page_urls(parsed.pages, source.uri)
        extra = [
            DocLink(p.title or u, u, "", p.section)
            for p, u in zip(parsed.pages, urls, strict=True)
            if p.url != u
        ]
        links = [*parsed.links, *extra]
        self.tables.record_fetch(
            source.id,
            etag=result.etag,
            last_modified=result.last_modified,
            sha256=sha256_bytes(result.content),
            fetched_at=now,
            links=links,
        )
        before = {p.url: p for p in self.tables.pages(source.id)}
        for page, url in zip(parsed.pages, urls, strict=True):
            old = before.get(url)
            if old is None or not old.inline or old.sha256 != sha256_text(page.text):
                stored = StoredPage(
                    url,
                    page.title or url,
                    "text/markdown",
                    None,
                    None,
                    sha256_text(page.text),
                    now,
                    True,
                    page.text,
                )
                self.pages.save(source, stored)
        listed = {link.url for link in links}
        gone = [
            u for u, p in before.items() if u not in listed and (p.inline or not within_prefix(u, source.uri))
        ]
        self.pages.drop(source, gone)
        sync_links(self.store, source, links, self.tables.page_urls(source.id))
        self.store.update_source(source.id, status="ready", last_error=None, last_indexed=now)

    def _page_text(self, source: Source, url: str, markdown: str) -> None:
        """A page was stored: its chunks replaced its link document (same path); links to its sections go
        too; and its text counts in ranking if its site is already in memory."""
        sections = self.tables.fragment_links(source.id, url)
        if sections:
            documents = self.store.documents(source.id)
            self.store.delete_documents(
                d.id
                for u in sections
                if (d := documents.get(u)) is not None and d.format == LINK_FORMAT and d.id
            )
        with self._lock:
            if self._indexed.get(source.name, (None,))[0] == source.id:
                with suppress(NotFoundError):
                    self.index.add_page_text(source.name, url, markdown)

    def _fail(self, source: Source, exc: CitedocsError) -> None:
        self.store.update_source(source.id, status="error", last_error=str(exc))
        self.tables.record_failure(source.id, self._clock())

    def _retry_in(self, state: SiteState) -> float:
        return (
            0.0 if state.failed_at is None else max(0.0, state.failed_at + FAILURE_BACKOFF_S - self._clock())
        )

    def _sync(self, only: str | None) -> None:
        """Bring the in-memory index in line with the store: load never-read sites (unless in back-off),
        rebuild sites whose links changed, forget removed ones."""
        with self._lock:
            self._seed_defaults()
            sites = {s.name: s for s in self.store.list_sources("site")}
            if only is not None and only not in sites:
                self._site(only)
            for name, (source_id, _) in list(self._indexed.items()):
                if name not in sites or sites[name].id != source_id:
                    self.index.remove_source(name)
                    del self._indexed[name]
            states = self.tables.states()
            for name, site in sites.items():
                state = states.get(site.id, SiteState())
                if state.fetched_at is None:
                    if not self._load_unread(site, state, named=name == only):
                        continue
                    state = self.tables.state(site.id)
                if self._indexed.get(name) != (site.id, state.revision):
                    self.index.add_source(name, self.tables.links(site.id))
                    self._indexed[name] = (site.id, state.revision)
                    for page in self.tables.pages(site.id):
                        with suppress(NotFoundError):
                            self.index.add_page_text(name, page.url, page.markdown)

    def _load_unread(self, site: Source, state: SiteState, *, named: bool) -> bool:
        """First read of a site registered without fetching (a default site); False when skipped."""
        retry_in = self._retry_in(state)
        if retry_in > 0:
            if named:
                raise FetchError(
                    f"Site '{site.name}' could not be read: {site.last_error}",
                    f"It is retried in {retry_in:.0f} s; run `citedocs refresh {site.name}` to retry now.",
                )
            return False
        try:
            result = self.fetcher.fetch(site.uri)
            self._store_llms_txt(site, result, self._parse(result))
        except CitedocsError as exc:
            self._fail(site, exc)
            if named:
                raise
            return False
        return True

    def _info(self, source: Source, counts: dict[int, tuple[int, int]] | None = None) -> SiteInfo:
        docs, pages = (counts if counts is not None else self.tables.counts()).get(source.id, (0, 0))
        retry = self._retry_in(self.tables.state(source.id)) if source.status == "error" else 0.0
        return SiteInfo(
            name=source.name,
            url=source.uri,
            docs=docs,
            pages_fetched=pages,
            chunks=self.store.counts(source.id)["chunks"],
            status=source.status,
            last_error=source.last_error,
            last_refreshed=source.last_indexed,
            retry_in_s=round(retry, 1) if retry else None,
        )
