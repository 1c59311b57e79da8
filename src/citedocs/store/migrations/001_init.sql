-- Sources (folders and sites), their documents, chunks, and the keyword index kept in step by triggers.
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE sources (
    id           INTEGER PRIMARY KEY,
    kind         TEXT NOT NULL CHECK (kind IN ('folder', 'site')),
    name         TEXT NOT NULL UNIQUE,
    uri          TEXT NOT NULL,
    options      TEXT NOT NULL DEFAULT '{}',
    status       TEXT NOT NULL DEFAULT 'new',
    last_error   TEXT,
    last_indexed REAL,
    created      REAL NOT NULL
);

CREATE TABLE documents (
    id         INTEGER PRIMARY KEY,
    source_id  INTEGER NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
    path       TEXT NOT NULL,
    rel_path   TEXT NOT NULL,
    format     TEXT,
    size       INTEGER,
    mtime_ns   INTEGER,
    sha256     TEXT,
    status     TEXT NOT NULL CHECK (status IN ('indexed', 'failed', 'empty')),
    reason     TEXT,
    title      TEXT,
    pages      INTEGER,
    indexed_at REAL NOT NULL,
    UNIQUE (source_id, path)
);

CREATE TABLE chunks (
    id          INTEGER PRIMARY KEY,
    chunk_id    TEXT NOT NULL,
    document_id INTEGER NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    ord         INTEGER NOT NULL,
    heading     TEXT NOT NULL,
    page_start  INTEGER,
    page_end    INTEGER,
    line_start  INTEGER NOT NULL,
    line_end    INTEGER NOT NULL,
    text        TEXT NOT NULL,
    sha256      TEXT NOT NULL,
    tokens      INTEGER NOT NULL
);
CREATE INDEX chunks_document ON chunks (document_id, ord);
CREATE INDEX chunks_chunk_id ON chunks (chunk_id);
CREATE INDEX chunks_sha ON chunks (sha256);

-- Holds analysed terms (see citedocs.analysis), not raw text: rowid = chunks.id.
CREATE VIRTUAL TABLE chunks_fts USING fts5 (
    heading, body, tokenize = "unicode61 remove_diacritics 2 tokenchars '_.-'"
);

-- Document frequency per term: lets a query prefer a whole identifier when the index has it.
CREATE VIRTUAL TABLE chunks_vocab USING fts5vocab (chunks_fts, 'row');

CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
    DELETE FROM chunks_fts WHERE rowid = old.id;
END;

CREATE TABLE jobs (
    id         INTEGER PRIMARY KEY,
    source_id  INTEGER REFERENCES sources (id) ON DELETE CASCADE,
    kind       TEXT NOT NULL,
    state      TEXT NOT NULL CHECK (state IN ('running', 'done', 'failed', 'interrupted')),
    pid        INTEGER,
    total      INTEGER NOT NULL DEFAULT 0,
    done       INTEGER NOT NULL DEFAULT 0,
    failed     INTEGER NOT NULL DEFAULT 0,
    current    TEXT,
    message    TEXT,
    started    REAL NOT NULL,
    finished   REAL
);
