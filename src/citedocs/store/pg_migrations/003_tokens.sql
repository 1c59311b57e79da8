-- Access tokens for a shared server: see the SQLite migration 005. Every replica reads the same table, so a
-- token created through one is accepted by all, and a revoked one by none.
CREATE TABLE tokens (
    name     TEXT PRIMARY KEY,
    hash     TEXT NOT NULL UNIQUE,
    scope    TEXT NOT NULL,
    sources  TEXT,
    created  DOUBLE PRECISION NOT NULL,
    expires  DOUBLE PRECISION,
    revoked  DOUBLE PRECISION
);
