"""Unfetched site pages in the main index: one short "link" document per listed page that has no stored copy.

Why in the main index and not merged in afterwards: the link's title, section, URL words and description are
then ranked by the same BM25 (and, once embedded, the same vectors) as every passage, so one ranking holds
folders, fetched pages and pages not yet fetched, and the folder/site/type filters apply unchanged. A link
document has format "link" and one chunk; when the page is fetched, the page's chunks replace it (same path:
the URL), and when the page leaves the llms.txt, the link document goes with it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING
from urllib.parse import urldefrag

from citedocs.hits import LINK_FORMAT
from citedocs.index.records import chunk_id_for, embedding_input
from citedocs.store import ChunkRecord, DocumentRecord, Source, Store
from citedocs.text.analyzer import index_text

if TYPE_CHECKING:
    from citedocs.sources.llmstxt import DocLink

__all__ = ["LINKS_KEY", "ensure_link_documents", "link_document", "sync_links"]

LINKS_KEY = "site_link_documents"  # set once every site's unfetched pages have link documents

_BATCH = 500


def link_document(link: DocLink, japanese: bool | None = None) -> tuple[DocumentRecord, ChunkRecord]:
    """The document and its single chunk that stand for an unfetched page.

    The title is the heading (weighted like a passage's heading), the description the text a hit shows; the
    section and the URL's path words count as body terms, as they say where the page sits. `japanese`: the
    site is Japanese (`site_is_japanese`), so a title of kanji only is cut into Japanese words, as a Japanese
    document's headings are (None: decide by the link's own text)."""
    title = link.title.strip() or link.url
    text = link.description.strip() or title
    from citedocs.sites.rank import site_is_japanese, url_path_text  # the site ranker: not for a search

    if japanese is None:
        japanese = site_is_japanese([link])
    heading_terms = index_text(f"{title} {url_path_text(link.url)}", japanese)
    body_terms = index_text(f"{text} {link.section}", japanese)
    digest = hashlib.sha256(embedding_input(title, text).encode()).hexdigest()
    chunk = ChunkRecord(
        chunk_id=chunk_id_for(link.url, title, text, {}),
        ord=0,
        heading=title,
        page_start=None,
        page_end=None,
        line_start=1,
        line_end=1,
        text=text,
        sha256=digest,
        tokens=len(text.split()),
        heading_terms=heading_terms,
        body_terms=body_terms,
    )
    record = DocumentRecord(
        path=link.url,
        rel_path=link.url,
        format=LINK_FORMAT,
        size=None,
        mtime_ns=None,
        # "ja": a link analysed as Japanese is written again (once) where an older analysis cut it into bigrams
        sha256=hashlib.sha256(
            f"{title}\0{text}\0{link.section}{chr(0) + 'ja' if japanese else ''}".encode()
        ).hexdigest(),
        status="indexed",
        title=title,
    )
    return record, chunk


def sync_links(store: Store, source: Source, links: Sequence[DocLink], stored_pages: Iterable[str]) -> int:
    """Make the site's link documents match its listed, unfetched pages; returns how many were written.

    A listed page with a stored copy (or a fragment of one) needs no link document; an unchanged link keeps
    its row (and its vector); a link no longer listed, or now fetched, loses it."""
    fetched = set(stored_pages)
    documents = store.documents(source.id)
    wanted: dict[str, DocLink] = {}
    for link in links:
        if link.url not in fetched and urldefrag(link.url).url not in fetched:
            wanted.setdefault(link.url, link)
    writes = []
    from citedocs.sites.rank import site_is_japanese

    japanese = site_is_japanese(links)
    for url, link in wanted.items():
        record, chunk = link_document(link, japanese)
        old = documents.get(url)
        # a new link, or a changed one; never a fetched page's chunks
        if old is None or (old.format == LINK_FORMAT and old.sha256 != record.sha256):
            writes.append((record, [chunk]))
    for start in range(0, len(writes), _BATCH):
        store.replace_documents(source.id, writes[start : start + _BATCH])
    stale = [d.id for url, d in documents.items() if d.format == LINK_FORMAT and url not in wanted and d.id]
    store.delete_documents(stale)
    return len(writes)


def ensure_link_documents(store: Store) -> None:
    """Sites registered before unfetched pages were searchable get their link documents, once per index."""
    if store.get_meta(LINKS_KEY):
        return
    from citedocs.store.site_tables import SiteTables

    tables = SiteTables(store)
    for site in store.list_sources("site"):
        sync_links(store, site, tables.links(site.id), tables.page_urls(site.id))
    store.set_meta(LINKS_KEY, "1")
