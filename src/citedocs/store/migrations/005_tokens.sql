-- Access tokens for a shared server (issue 49). Only a SHA-256 of each secret is kept: the secret is printed
-- once by `citedocs token create` and cannot be recovered from the index. `sources` is a JSON list of source
-- names the token may see (NULL: every source); `expires` and `revoked` are Unix times (NULL: never).
CREATE TABLE tokens (
    name     TEXT PRIMARY KEY,
    hash     TEXT NOT NULL UNIQUE,
    scope    TEXT NOT NULL,
    sources  TEXT,
    created  REAL NOT NULL,
    expires  REAL,
    revoked  REAL
);
