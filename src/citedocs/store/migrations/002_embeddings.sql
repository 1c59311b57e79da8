-- Vectors keyed by the hash of the text that was embedded (heading + chunk text), so a chunk whose text did
-- not change keeps its vector even when its document is re-chunked. One model per index: see meta
-- 'embed_fingerprint'.
CREATE TABLE embeddings (
    sha256 TEXT PRIMARY KEY,
    vec    BLOB NOT NULL
);
