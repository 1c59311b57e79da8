"""SQLite vs PostgreSQL (pgvector) on SciFact, then on synthetic 10× and 100× scale-ups, in one run.

    .venv/bin/python bench/bench_postgres.py [--scales 1,10,100] [--pg postgresql://...] [--out bench/out/postgres.json]

Without `--pg` a PostgreSQL 16 + pgvector 0.6 from the `pgserver` wheel is started in a temporary folder
(default settings: shared_buffers 128 MB). Both backends are written through the production path:
`Store.replace_document` (one transaction per document) and `Store.put_vectors` (batches of 256).

- Scale 1 is SciFact itself: nDCG@10 per mode on both backends must agree within 0.01.
- Scale m adds m-1 perturbed copies of every document: 20% of its analysed terms dropped at random, its
  vector moved by Gaussian noise to cosine ~0.9 of the original. Copies are built from the analysed terms
  (no re-parsing), so index time is the store's write time.
- Query latency is the ranking only (BM25, vector top-k, fusion, loading the hits' chunks) with the query
  vectors embedded once beforehand, so the embedding model's cost, the same on both backends, is left out.
- PostgreSQL's semantic recall@10 is measured against the exact ranking (numpy over all vectors).
- SQLite ranks vectors with an in-memory matrix: its rebuild after an index change is reported separately.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import statistics
import tempfile
import time
import warnings
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from _env import SHARED_DATA, header, pct, print_header

from citedocs.chunker import Segment, chunk_segments
from citedocs.embed.blob import matrix_from_blobs, to_blob
from citedocs.embed.factory import make_embedder
from citedocs.eval.beir import BeirData, load_beir
from citedocs.eval.metrics import ndcg_at_k
from citedocs.index.ingest import CHUNK_MAX_TOKENS, CHUNK_MIN_TOKENS
from citedocs.index.records import chunk_records
from citedocs.search.hybrid import CANDIDATES, VectorSearch, fuse
from citedocs.search.keyword import keyword_ranking
from citedocs.settings import Settings
from citedocs.store import ChunkRecord, DocumentRecord, SQLiteStore, Store, open_store

NOISE_COSINE = 0.9
DROP = 0.2


def original_records(data: BeirData, settings: Settings) -> list[tuple[DocumentRecord, list[ChunkRecord]]]:
    out = []
    for doc_id, (title, text) in data.corpus.items():
        body = text or title
        segment = Segment(body, (title,) if title else (), 1, body.count("\n") + 1)
        drafts = chunk_segments(
            [segment],
            target=settings.chunk_tokens,
            overlap=settings.chunk_overlap,
            min_tokens=CHUNK_MIN_TOKENS,
            max_tokens=CHUNK_MAX_TOKENS,
        )
        record = DocumentRecord(
            f"beir://{doc_id}", doc_id, "text", len(body), 0, None, "indexed", title=title
        )
        out.append((record, chunk_records(doc_id, None, drafts)))
    return out


def _drop(terms: str, rng: random.Random) -> str:
    words = terms.split()
    kept = [w for w in words if rng.random() >= DROP]
    return " ".join(kept or words[:1])


def scaled(
    originals: list[tuple[DocumentRecord, list[ChunkRecord]]], copies: int
) -> Iterator[tuple[DocumentRecord, list[ChunkRecord], list[str]]]:
    """(document, chunks, original sha per chunk): the originals, then `copies` perturbed copies of each."""
    for doc, chunks in originals:
        yield doc, chunks, [c.sha256 for c in chunks]
    for copy in range(1, copies + 1):
        rng = random.Random(copy)
        for doc, chunks in originals:
            new_doc = replace(doc, path=f"{doc.path}~{copy}", rel_path=f"{doc.rel_path}~{copy}")
            new_chunks = [
                replace(
                    c,
                    chunk_id=f"{c.chunk_id}~{copy}",
                    sha256=hashlib.sha256(f"{c.sha256}~{copy}".encode()).hexdigest(),
                    heading_terms=_drop(c.heading_terms, rng),
                    body_terms=_drop(c.body_terms, rng),
                )
                for c in chunks
            ]
            yield new_doc, new_chunks, [c.sha256 for c in chunks]


def noisy(vector: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    sigma = float(np.sqrt((1 / NOISE_COSINE**2 - 1) / vector.shape[0]))
    moved = vector + rng.normal(0.0, sigma, vector.shape).astype(np.float32)
    return (moved / np.linalg.norm(moved)).astype(np.float32)


def embed_originals(
    originals: list[tuple[DocumentRecord, list[ChunkRecord]]], data: BeirData, cache: Path
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Chunk vectors by sha and query vectors by query id, computed once and cached on disk."""
    if cache.exists():
        saved = np.load(cache, allow_pickle=False)
        shas, qids = list(saved["shas"]), list(saved["qids"])
        return dict(zip(shas, saved["chunks"], strict=True)), dict(zip(qids, saved["queries"], strict=True))
    embedder = make_embedder(Settings(embedder="local"))
    assert embedder is not None
    embedder.wait()
    unique = {c.sha256: c for _, chunks in originals for c in chunks}
    from citedocs.index.records import embedding_input

    shas = list(unique)
    vectors = []
    for start in range(0, len(shas), 64):
        part = [unique[s] for s in shas[start : start + 64]]
        vectors.append(embedder.embed_passages([embedding_input(c.heading, c.text) for c in part]))
    chunk_matrix = np.vstack(vectors).astype(np.float32)
    qids = list(data.queries)
    query_matrix = np.vstack([embedder.embed_query(data.queries[q]) for q in qids]).astype(np.float32)
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.savez(cache, shas=np.array(shas), chunks=chunk_matrix, qids=np.array(qids), queries=query_matrix)
    return dict(zip(shas, chunk_matrix, strict=True)), dict(zip(qids, query_matrix, strict=True))


def load(
    store: Store,
    docs: Iterator[tuple[DocumentRecord, list[ChunkRecord], list[str]]],
    vectors: dict[str, np.ndarray],
    *,
    bulk: bool,
) -> dict[str, float]:
    """Write every document and vector; `bulk` batches 500 documents per transaction and, on PostgreSQL,
    builds the postings indexes after the load instead of during it (as pg_restore does)."""
    source = store.add_source("folder", "beir", "beir://")
    rng = np.random.default_rng(0)
    pending: list[tuple[str, bytes]] = []
    batch: list[tuple[DocumentRecord, list[ChunkRecord]]] = []
    keyword_s = vector_s = 0.0
    n_docs = 0
    pg = not isinstance(store, SQLiteStore)
    if bulk and pg:
        with store.transaction() as conn:
            conn.execute("ALTER TABLE postings DROP CONSTRAINT postings_pkey")
            conn.execute("DROP INDEX postings_chunk")
    started = time.perf_counter()
    for doc, chunks, origin in docs:
        n_docs += 1
        batch.append((doc, chunks))
        if not bulk or len(batch) >= 500:
            store.replace_documents(source.id, batch)
            batch = []
        for chunk, sha in zip(chunks, origin, strict=True):
            base = vectors[sha]
            pending.append((chunk.sha256, to_blob(base if chunk.sha256 == sha else noisy(base, rng))))
        if len(pending) >= (2000 if bulk else 256):
            t0 = time.perf_counter()
            store.put_vectors(pending)
            vector_s += time.perf_counter() - t0
            pending = []
    store.replace_documents(source.id, batch)
    if bulk and pg:
        with store.transaction() as conn:
            conn.execute("SET LOCAL maintenance_work_mem = '1GB'")
            conn.execute(
                "ALTER TABLE postings ADD PRIMARY KEY (term, chunk_id) INCLUDE (in_heading, in_body, length)"
            )
            conn.execute("CREATE INDEX postings_chunk ON postings (chunk_id)")
    keyword_s = time.perf_counter() - started - vector_s
    t0 = time.perf_counter()
    store.put_vectors(pending)
    store.index_vectors(384)  # as embed_pending does at the end of a pass
    vector_s += time.perf_counter() - t0
    if pg:  # what autovacuum does shortly after a load: statistics and the visibility map
        store._conn().execute("VACUUM ANALYZE")
    return {"docs": n_docs, "keyword_index_s": keyword_s, "vector_index_s": vector_s, "source": source.id}


def incremental(store: Store, source_id: int, docs: list[tuple[DocumentRecord, list[ChunkRecord]]]) -> float:
    """P50 ms to index one more document the production way (its own transaction) into the loaded index."""
    times = []
    for doc, chunks in docs:
        t0 = time.perf_counter()
        store.replace_document(source_id, doc, chunks)
        times.append((time.perf_counter() - t0) * 1000)
    return round(statistics.median(times), 2)


def db_size(store: Store, path: Path | None) -> int:
    if path is not None:
        return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))
    return int(store._conn().execute("SELECT pg_database_size(current_database())").fetchone()[0])


def measure(store: Store, data: BeirData, qvecs: dict[str, np.ndarray], queries: list[str]) -> dict[str, Any]:
    search = VectorSearch(store)
    t0 = time.perf_counter()
    search.top_k(next(iter(qvecs.values())), 1)  # SQLite: builds the in-memory matrix; PostgreSQL: HNSW
    warm_s = time.perf_counter() - t0
    exact = None
    if not search.native:
        exact = search.cache.matrix(384)
    else:
        ids, blobs = _all_vectors_pg(store)
        from citedocs.search.vectors import VectorMatrix

        exact = VectorMatrix(ids, matrix_from_blobs(blobs, 384))
    lat: dict[str, list[float]] = {"keyword": [], "semantic": [], "hybrid": []}
    ndcg: dict[str, list[float]] = {"keyword": [], "semantic": [], "hybrid": []}
    recall: list[float] = []
    for qid in queries:
        query, qvec = data.queries[qid], qvecs[qid]
        rankings = {}
        t0 = time.perf_counter()
        keyword = keyword_ranking(store, query, CANDIDATES)
        store.chunks_by_rowid([r for r, _ in keyword[:10]])
        lat["keyword"].append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        semantic = search.top_k(qvec, CANDIDATES)
        store.chunks_by_rowid([r for r, _ in semantic[:10]])
        lat["semantic"].append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        keyword2 = keyword_ranking(store, query, CANDIDATES)
        semantic2 = search.top_k(qvec, CANDIDATES)
        fused = fuse(keyword2, semantic2, CANDIDATES)
        store.chunks_by_rowid([r for r, _ in fused[:10]])
        lat["hybrid"].append((time.perf_counter() - t0) * 1000)
        rankings = {"keyword": keyword, "semantic": semantic, "hybrid": fused}
        truth = {r for r, _ in exact.top_k(qvec, 10)}
        recall.append(len(truth & {r for r, _ in semantic[:10]}) / max(1, len(truth)))
        for mode, ranking in rankings.items():
            chunks = store.chunks_by_rowid([r for r, _ in ranking])
            ranked: dict[str, None] = {}
            for rowid, _ in ranking:
                if rowid in chunks:
                    ranked.setdefault(chunks[rowid].rel_path, None)
            ndcg[mode].append(ndcg_at_k(list(ranked), data.qrels[qid], 10))
    out: dict[str, Any] = {
        "first_query_warmup_s": round(warm_s, 3),
        "semantic_recall@10_vs_exact": round(statistics.mean(recall), 4),
    }
    for mode in lat:
        out[f"{mode}_ndcg@10"] = round(statistics.mean(ndcg[mode]), 4)
        out[f"{mode}_ms_p50"] = round(statistics.median(lat[mode]), 2)
        out[f"{mode}_ms_p95"] = round(pct(lat[mode], 95), 2)
    return out


def _all_vectors_pg(store: Store) -> tuple[list[int], list[bytes]]:
    rows = (
        store._conn()
        .execute("SELECT c.id, CAST(e.vec AS real[]) FROM chunks c JOIN embeddings e ON e.sha256 = c.sha256")
        .fetchall()
    )
    return [int(r[0]) for r in rows], [np.asarray(r[1], dtype="<f4").tobytes() for r in rows]


def start_pgserver(folder: Path) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver

        return pgserver.get_server(folder, cleanup_mode="stop")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scifact", default=str(SHARED_DATA / "scifact"))
    parser.add_argument("--scales", default="1,10")
    parser.add_argument("--pg", default="", help="an empty PostgreSQL server URL (default: start pgserver)")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--bulk-from", type=int, default=100, help="load scales from this one in bulk")
    parser.add_argument("--out", default="bench/out/postgres.json")
    args = parser.parse_args()
    print_header("SQLite vs PostgreSQL + pgvector: SciFact and synthetic scale-ups")
    settings = Settings(embedder="none")
    data = load_beir(Path(args.scifact))
    originals = original_records(data, settings)
    chunk_vecs, qvecs = embed_originals(originals, data, Path("bench/out/scifact-minilm-vectors.npz"))
    queries = list(data.queries)[: args.queries]
    work = Path(tempfile.mkdtemp(prefix="citedocs-bench-pg-"))
    server = None if args.pg else start_pgserver(work / "pgdata")
    admin = args.pg or server.get_uri()
    rows: list[dict[str, Any]] = []
    try:
        import psycopg

        for scale in [int(s) for s in args.scales.split(",")]:
            for backend in ("sqlite", "postgres"):
                if backend == "sqlite":
                    path: Path | None = work / f"scale{scale}.sqlite3"
                    store: Store = SQLiteStore(path)
                else:
                    path = None
                    name = f"bench_scale{scale}"
                    with psycopg.connect(admin, autocommit=True) as conn:
                        conn.execute(f"DROP DATABASE IF EXISTS {name}")
                        conn.execute(f"CREATE DATABASE {name}")
                    store = open_store(
                        admin.replace("/postgres?", f"/{name}?") if server else f"{admin.rstrip('/')}/{name}"
                    )
                stats = load(store, scaled(originals, scale - 1), chunk_vecs, bulk=scale >= args.bulk_from)
                extra = [(replace(d, path=f"{d.path}~new"), c) for d, c in originals[:300]]
                row: dict[str, Any] = {
                    "scale": scale,
                    "backend": backend,
                    "docs": stats["docs"],
                    "chunks": store.counts()["chunks"],
                    "keyword_index_s": round(stats["keyword_index_s"], 1),
                    "docs_per_s": round(stats["docs"] / stats["keyword_index_s"]),
                    "vector_index_s": round(stats["vector_index_s"], 1),
                }
                row["bulk_load"] = scale >= args.bulk_from
                row.update(measure(store, data, qvecs, queries))
                row["add_one_doc_ms_p50"] = incremental(store, int(stats["source"]), extra)
                row["db_mb"] = round(db_size(store, path) / 1e6)
                rows.append(row)
                print(json.dumps(row), flush=True)
                store.close()
    finally:
        if server is not None:
            server.cleanup()
        shutil.rmtree(work, ignore_errors=True)
    report(rows)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"header": header(), "rows": rows}, indent=2), encoding="utf-8")


def report(rows: list[dict[str, Any]]) -> None:
    cols = [
        "scale",
        "backend",
        "docs",
        "chunks",
        "bulk_load",
        "keyword_index_s",
        "docs_per_s",
        "vector_index_s",
        "add_one_doc_ms_p50",
        "keyword_ms_p50",
        "keyword_ms_p95",
        "semantic_ms_p50",
        "semantic_ms_p95",
        "hybrid_ms_p50",
        "hybrid_ms_p95",
        "first_query_warmup_s",
        "semantic_recall@10_vs_exact",
        "db_mb",
    ]
    print("\n| " + " | ".join(cols) + " |")
    print("|---" * len(cols) + "|")
    for row in rows:
        print("| " + " | ".join(str(row.get(c, "")) for c in cols) + " |")
    print("\nnDCG@10 on SciFact (scale 1):")
    base = {r["backend"]: r for r in rows if r["scale"] == 1}
    if len(base) == 2:
        for mode in ("keyword", "semantic", "hybrid"):
            lite, pg = base["sqlite"][f"{mode}_ndcg@10"], base["postgres"][f"{mode}_ndcg@10"]
            print(f"- {mode}: sqlite {lite} postgres {pg} (difference {pg - lite:+.4f})")
    print("\nlatency ratios postgres/sqlite (P50):")
    for scale in sorted({r["scale"] for r in rows}):
        pair = {r["backend"]: r for r in rows if r["scale"] == scale}
        if len(pair) == 2:
            ratios = {
                m: round(pair["postgres"][f"{m}_ms_p50"] / pair["sqlite"][f"{m}_ms_p50"], 2)
                for m in ("keyword", "semantic", "hybrid")
            }
            print(f"- scale {scale}: {ratios}")


if __name__ == "__main__":
    main()
