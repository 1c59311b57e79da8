"""The SQL for llms.txt sites: listed links, how each llms.txt was fetched, and fetched pages.

The site row itself lives in `sources`; every table here cascades from it, so removing the source purges
them with its documents and chunks in one statement.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from citedocs.sources.llmstxt import DocLink
from citedocs.store.base import Store

__all__ = ["SiteState", "SiteTables", "StoredPage"]


@dataclass(frozen=True, slots=True)
class SiteState:
    """How a site's llms.txt was last fetched; `fetched_at` None means never successfully."""

    etag: str | None = None
    last_modified: str | None = None
    sha256: str | None = None
    fetched_at: float | None = None
    failed_at: float | None = None
    revision: int = 0


@dataclass(frozen=True, slots=True)
class StoredPage:
    url: str
    title: str
    content_type: str
    etag: str | None
    last_modified: str | None
    sha256: str
    fetched_at: float
    inline: bool
    markdown: str


def _page(row: Any) -> StoredPage:
    return StoredPage(
        url=row["url"],
        title=row["title"],
        content_type=row["content_type"],
        etag=row["etag"],
        last_modified=row["last_modified"],
        sha256=row["sha256"],
        fetched_at=row["fetched_at"],
        inline=bool(row["inline"]),
        markdown=row["markdown"],
    )


def _state(row: Any) -> SiteState:
    return SiteState(
        row["etag"], row["last_modified"], row["sha256"], row["fetched_at"], row["failed_at"], row["revision"]
    )


class SiteTables:
    """Site tables of one store (either backend), through its connections and write transactions."""

    def __init__(self, store: Store) -> None:
        self.store = store

    # -- llms.txt state ---------------------------------------------------------------------------
    def states(self) -> dict[int, SiteState]:
        rows = self.store._conn().execute("SELECT * FROM site_state").fetchall()
        return {int(r["source_id"]): _state(r) for r in rows}

    def state(self, source_id: int) -> SiteState:
        row = (
            self.store._conn()
            .execute("SELECT * FROM site_state WHERE source_id = ?", (source_id,))
            .fetchone()
        )
        return SiteState() if row is None else _state(row)

    def record_fetch(
        self,
        source_id: int,
        *,
        etag: str | None,
        last_modified: str | None,
        sha256: str | None,
        fetched_at: float,
        links: Sequence[DocLink] | None,
    ) -> None:
        """A successful fetch of the llms.txt; `links` (when not None) replace the listed links and bump
        the revision, all in one transaction."""
        with self.store.transaction() as conn:
            conn.execute(
                "INSERT INTO site_state (source_id, etag, last_modified, sha256, fetched_at, failed_at) "
                "VALUES (?, ?, ?, ?, ?, NULL) ON CONFLICT (source_id) DO UPDATE SET etag = excluded.etag, "
                "last_modified = excluded.last_modified, sha256 = excluded.sha256, "
                "fetched_at = excluded.fetched_at, failed_at = NULL",
                (source_id, etag, last_modified, sha256, fetched_at),
            )
            if links is None:
                return
            conn.execute("DELETE FROM site_links WHERE source_id = ?", (source_id,))
            conn.executemany(
                "INSERT INTO site_links (source_id, ord, url, title, description, section, optional) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                [
                    (source_id, n, link.url, link.title, link.description, link.section, int(link.optional))
                    for n, link in enumerate(links)
                ],
            )
            conn.execute("UPDATE site_state SET revision = revision + 1 WHERE source_id = ?", (source_id,))

    def record_failure(self, source_id: int, failed_at: float | None) -> None:
        """Start (or, with None, clear) the retry back-off of a site whose llms.txt could not be read."""
        with self.store.transaction() as conn:
            conn.execute(
                "INSERT INTO site_state (source_id, failed_at) VALUES (?, ?) "
                "ON CONFLICT (source_id) DO UPDATE SET failed_at = excluded.failed_at",
                (source_id, failed_at),
            )

    # -- links ------------------------------------------------------------------------------------
    def links(self, source_id: int) -> list[DocLink]:
        rows = (
            self.store._conn()
            .execute(
                "SELECT url, title, description, section, optional FROM site_links WHERE source_id = ? "
                "ORDER BY ord",
                (source_id,),
            )
            .fetchall()
        )
        return [
            DocLink(r["title"], r["url"], r["description"], r["section"], bool(r["optional"])) for r in rows
        ]

    def link(self, source_id: int, url: str) -> DocLink | None:
        row = (
            self.store._conn()
            .execute(
                "SELECT url, title, description, section, optional FROM site_links "
                "WHERE source_id = ? AND url = ?",
                (source_id, url),
            )
            .fetchone()
        )
        if row is None:
            return None
        return DocLink(row["title"], row["url"], row["description"], row["section"], bool(row["optional"]))

    def sources_listing(self, url: str) -> list[int]:
        """Ids of the sites whose llms.txt lists `url` (or that hold it as a page), oldest first."""
        rows = (
            self.store._conn()
            .execute(
                "SELECT source_id FROM site_links WHERE url = ? UNION "
                "SELECT source_id FROM site_pages WHERE url = ? ORDER BY source_id",
                (url, url),
            )
            .fetchall()
        )
        return [int(r[0]) for r in rows]

    def counts(self) -> dict[int, tuple[int, int]]:
        """Per site: (links listed, pages stored)."""
        rows = (
            self.store._conn()
            .execute(
                "SELECT s.id, (SELECT COUNT(*) FROM site_links l WHERE l.source_id = s.id), "
                "(SELECT COUNT(*) FROM site_pages p WHERE p.source_id = s.id) FROM sources s "
                "WHERE s.kind = 'site'"
            )
            .fetchall()
        )
        return {int(r[0]): (int(r[1]), int(r[2])) for r in rows}

    # -- pages ------------------------------------------------------------------------------------
    def page(self, source_id: int, url: str) -> StoredPage | None:
        row = (
            self.store._conn()
            .execute("SELECT * FROM site_pages WHERE source_id = ? AND url = ?", (source_id, url))
            .fetchone()
        )
        return None if row is None else _page(row)

    def pages(self, source_id: int) -> list[StoredPage]:
        rows = (
            self.store._conn()
            .execute("SELECT * FROM site_pages WHERE source_id = ? ORDER BY url", (source_id,))
            .fetchall()
        )
        return [_page(r) for r in rows]

    def page_urls(self, source_id: int) -> list[str]:
        rows = self.store._conn().execute("SELECT url FROM site_pages WHERE source_id = ?", (source_id,))
        return [r[0] for r in rows.fetchall()]

    def fragment_links(self, source_id: int, url: str) -> list[str]:
        """Listed URLs that are `url` plus a #fragment (llms.txt files link sections of one page)."""
        escaped = url.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = self.store._conn().execute(
            "SELECT url FROM site_links WHERE source_id = ? AND url LIKE ? ESCAPE '\\'",
            (source_id, escaped + "#%"),
        )
        return [r[0] for r in rows.fetchall()]

    def put_page(self, source_id: int, page: StoredPage) -> None:
        with self.store.transaction() as conn:
            conn.execute(
                "INSERT INTO site_pages (source_id, url, title, content_type, etag, last_modified, sha256, "
                "fetched_at, inline, markdown) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (source_id, url) "
                "DO UPDATE SET title = excluded.title, content_type = excluded.content_type, etag = excluded.etag, "
                "last_modified = excluded.last_modified, sha256 = excluded.sha256, "
                "fetched_at = excluded.fetched_at, inline = excluded.inline, markdown = excluded.markdown",
                (
                    source_id,
                    page.url,
                    page.title,
                    page.content_type,
                    page.etag,
                    page.last_modified,
                    page.sha256,
                    page.fetched_at,
                    int(page.inline),
                    page.markdown,
                ),
            )

    def touch_page(
        self, source_id: int, url: str, fetched_at: float, etag: str | None, last_modified: str | None
    ) -> None:
        """The page was confirmed unchanged: keep its text, refresh its validators."""
        with self.store.transaction() as conn:
            conn.execute(
                "UPDATE site_pages SET fetched_at = ?, etag = COALESCE(?, etag), "
                "last_modified = COALESCE(?, last_modified) WHERE source_id = ? AND url = ?",
                (fetched_at, etag, last_modified, source_id, url),
            )

    def delete_pages(self, source_id: int, urls: Sequence[str]) -> None:
        with self.store.transaction() as conn:
            conn.executemany(
                "DELETE FROM site_pages WHERE source_id = ? AND url = ?", [(source_id, u) for u in urls]
            )
