"""Pages of llms.txt sites: confined fetches, markdown, an LRU cache, stored copies with their validators,
and their text chunked into the main index."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from urllib.parse import urldefrag

from citedocs.errors import AccessDenied, CitedocsError, FetchError
from citedocs.index.ingest import ingest
from citedocs.parsers.markdown import parse_markdown
from citedocs.settings import Settings
from citedocs.sites.model import FetchedPage, PageCache, first_heading, page_markdown, sha256_text
from citedocs.sources.fetch import FetchResult, GuardedFetcher
from citedocs.sources.ssrf import site_prefix, within_prefix
from citedocs.store import DocumentRecord, Source, Store
from citedocs.store.site_tables import SiteTables, StoredPage

__all__ = ["PageTextHook", "SitePages"]

PageTextHook = Callable[[Source, str, str], None]  # (site, url, markdown) after a page is stored

_GONE = re.compile(r"answered HTTP (?:404|410)\b")
_REFRESH_WORKERS = 4


class SitePages:
    def __init__(
        self,
        store: Store,
        settings: Settings,
        fetcher: Callable[[], GuardedFetcher],
        clock: Callable[[], float],
        on_page_text: PageTextHook,
    ) -> None:
        self.store = store
        self.settings = settings
        self.tables = SiteTables(store)
        self.cache = PageCache(settings.page_cache_size)
        self._fetcher = fetcher
        self._clock = clock
        self._on_page_text = on_page_text

    def fetch(self, url: str) -> FetchedPage:
        """A page as markdown, if a registered llms.txt lists it or it lies under a site's directory.
        When the site cannot be reached, the stored copy (if any) is served instead."""
        url = url.strip()
        cached = self.cache.get(url)
        if cached is not None:
            return replace(cached, from_cache=True)
        source, key, confine = self._owner(url)
        stored = self.tables.page(source.id, key)
        if stored is not None and stored.inline:
            page = _from_stored(source, stored)
        else:
            try:
                result = self._get(key, stored, confine)
            except FetchError as exc:
                if stored is None or isinstance(exc, AccessDenied):
                    raise
                page = _from_stored(source, stored)
            else:
                page, _ = self._apply(source, key, stored, result)
        self.cache.put(page)
        return page

    def save(self, source: Source, page: StoredPage) -> None:
        """Chunk the page into the main index (a document whose path is the URL), then keep its copy."""
        parsed = parse_markdown(page.markdown.encode("utf-8"), page.url)
        record = DocumentRecord(
            path=page.url,
            rel_path=page.url,
            format="markdown",
            size=len(page.markdown.encode("utf-8")),
            mtime_ns=None,
            sha256=page.sha256,
            status="indexed",
            title=page.title,
        )
        ingest(self.store, source.id, record, parsed.segments, self.settings)
        self.tables.put_page(source.id, page)
        self.cache.drop(urls={page.url})
        self._on_page_text(source, page.url, page.markdown)

    def drop(self, source: Source, urls: Sequence[str]) -> None:
        """Forget pages: their stored copies, documents and chunks."""
        if not urls:
            return
        documents = self.store.documents(source.id)
        self.store.delete_documents([d.id for u in urls if (d := documents.get(u)) is not None and d.id])
        self.tables.delete_pages(source.id, urls)
        self.cache.drop(urls=set(urls))

    def revalidate(self, source: Source) -> dict[str, int]:
        """Conditional GETs for every fetched page, a few at a time: unchanged pages answer 304 and keep
        their chunks, changed ones are re-chunked, gone ones (404/410, or no longer the site's) dropped."""
        listed = {link.url for link in self.tables.links(source.id)}
        pages = [p for p in self.tables.pages(source.id) if not p.inline]
        counts = dict.fromkeys(
            ("pages_checked", "pages_unchanged", "pages_updated", "pages_removed", "pages_failed"), 0
        )
        gone = [p.url for p in pages if p.url not in listed and not within_prefix(p.url, source.uri)]
        strict = self.settings.sites_same_origin
        live = [p for p in pages if p.url not in gone]

        def get(page: StoredPage) -> FetchResult | CitedocsError:
            try:
                return self._get(page.url, page, None if page.url in listed and not strict else source.uri)
            except CitedocsError as exc:
                return exc

        with ThreadPoolExecutor(max_workers=_REFRESH_WORKERS) as pool:
            outcomes = list(pool.map(get, live))
        for page, outcome in zip(live, outcomes, strict=True):
            counts["pages_checked"] += 1
            if isinstance(outcome, CitedocsError):
                if _GONE.search(outcome.message):
                    gone.append(page.url)
                else:
                    counts["pages_failed"] += 1
                continue
            try:
                _, what = self._apply(source, page.url, page, outcome)
            except CitedocsError:
                counts["pages_failed"] += 1
                continue
            counts[f"pages_{what}"] += 1
        self.drop(source, gone)
        counts["pages_removed"] = len(gone)
        return counts

    def _owner(self, url: str) -> tuple[Source, str, str | None]:
        """(site, URL to fetch, prefix it is confined to): a listing site first, then the deepest prefix."""
        sites = {s.id: s for s in self.store.list_sources("site")}
        bare = urldefrag(url).url
        for candidate in dict.fromkeys((url, bare)):
            for source_id in self.tables.sources_listing(candidate):
                if source_id in sites:  # listed: any origin, unless confined to the llms.txt's own area
                    site = sites[source_id]
                    return site, candidate, site.uri if self.settings.sites_same_origin else None
        covering = [s for s in sites.values() if within_prefix(bare, s.uri)]
        if covering:
            best = max(covering, key=lambda s: len(site_prefix(s.uri)))
            return best, bare, best.uri
        raise AccessDenied(
            f"refused: {url} is not listed in a registered site's llms.txt nor under one's directory.",
            "Fetch a URL that a site search returned, or register its site with `citedocs add-site NAME URL`.",
        )

    def _get(self, url: str, stored: StoredPage | None, confine: str | None) -> FetchResult:
        return self._fetcher().fetch(
            url,
            etag=stored.etag if stored else None,
            last_modified=stored.last_modified if stored else None,
            confine_to=confine,
        )

    def _apply(
        self, source: Source, url: str, stored: StoredPage | None, result: FetchResult
    ) -> tuple[FetchedPage, str]:
        """Store a fetch result; returns the page and 'unchanged' or 'updated'."""
        now = self._clock()
        if result.not_modified:
            if stored is None:
                raise FetchError(f"{url} answered 304 to an unconditional request.", "Try again later.")
            self.tables.touch_page(source.id, url, now, result.etag, result.last_modified)
            return _from_stored(source, stored), "unchanged"
        markdown, media = page_markdown(result)
        digest = sha256_text(markdown)
        if stored is not None and stored.sha256 == digest:
            self.tables.touch_page(source.id, url, now, result.etag, result.last_modified)
            return replace(_from_stored(source, stored), from_cache=False), "unchanged"
        link = self.tables.link(source.id, url)
        title = (link.title if link else None) or first_heading(markdown) or url
        self.save(
            source,
            StoredPage(url, title, media, result.etag, result.last_modified, digest, now, False, markdown),
        )
        return FetchedPage(url, source.name, title, markdown, media, False), "updated"


def _from_stored(source: Source, page: StoredPage) -> FetchedPage:
    return FetchedPage(page.url, source.name, page.title, page.markdown, page.content_type, True)
