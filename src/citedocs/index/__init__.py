"""Indexing: parse, chunk and store a document (`ingest`), the folder indexer, and the embedding pass."""
