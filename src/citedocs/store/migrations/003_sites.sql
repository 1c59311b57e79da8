-- llms.txt sites. The site itself is a row of `sources` (kind 'site'); these tables hold what its llms.txt
-- lists, how that file was last fetched, and the pages fetched from it. Fetched page text is also chunked
-- into `documents`/`chunks` (path = page URL), so the main search and answers see it.

-- How the site's llms.txt was last fetched; `revision` grows whenever its links change, so every process
-- can tell when its in-memory ranking index is stale. `failed_at` starts the retry back-off.
CREATE TABLE site_state (
    source_id     INTEGER PRIMARY KEY REFERENCES sources (id) ON DELETE CASCADE,
    etag          TEXT,
    last_modified TEXT,
    sha256        TEXT,
    fetched_at    REAL,
    failed_at     REAL,
    revision      INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE site_links (
    source_id   INTEGER NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
    ord         INTEGER NOT NULL,
    url         TEXT NOT NULL,
    title       TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    section     TEXT NOT NULL DEFAULT '',
    optional    INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (source_id, url)
);
CREATE INDEX site_links_url ON site_links (url);

-- One fetched (or inlined, `inline` = 1) page: its markdown and the validators for conditional requests.
CREATE TABLE site_pages (
    source_id     INTEGER NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
    url           TEXT NOT NULL,
    title         TEXT NOT NULL,
    content_type  TEXT NOT NULL DEFAULT '',
    etag          TEXT,
    last_modified TEXT,
    sha256        TEXT NOT NULL,
    fetched_at    REAL NOT NULL,
    inline        INTEGER NOT NULL DEFAULT 0,
    markdown      TEXT NOT NULL,
    PRIMARY KEY (source_id, url)
);
CREATE INDEX site_pages_url ON site_pages (url);
