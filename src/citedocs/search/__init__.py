"""Ranking: keyword (FTS5 BM25), vectors, fusion."""
