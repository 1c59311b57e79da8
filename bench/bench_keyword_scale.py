"""Keyword search at 1×, 10× and 100× SciFact: citedocs' in-memory BM25, its FTS5 path and bm25s, one process.

    nice -n 10 .venv/bin/python bench/bench_keyword_scale.py [--scales 1,10,100] [--cache DIR] [--pg-scales 1,10]

- Scale m is SciFact plus m-1 perturbed copies of every document (bench_postgres.scaled: 20% of each copy's
  analysed terms dropped at random, ids suffixed `~n`), so document frequencies and lengths grow with the
  corpus. Indexes are written through `Store.replace_documents` (500 documents a commit) and cached in
  --cache; the first run builds them (the 100× build takes minutes).
- citedocs "memory" is `keyword_ranking` with the engine's `KeywordIndex` (search/keyword_index.py);
  "fts5" is the same call without it (the store's FTS5 bm25(), the path before this index); both include
  the query analysis. bm25s (k1 1.2, b 0.75, its default Lucene idf) indexes the very same FTS5 tokens of
  every chunk and is queried with the same analysed query terms, so the two differ only in how they rank.
  bm25s is called in-thread (`n_threads=0`, its default and its best for one query: `n_threads=1` builds a
  thread pool per call, 22.8 vs 0.5 ms a query under load).
- Queries run one at a time, single-threaded, interleaved per query (memory, bm25s, then fts5 on a sample
  at large scales); k = 100 as the hybrid search asks. nDCG@10 maps a copy `id~n` back to `id` (a
  document counts once, at its best chunk).
- Memory: the index's numpy arrays per chunk, and the process RSS growth while each index was built.
- Incremental: one new document written (its own transaction) into the largest index, then searched for
  until it is found: the delay from the write's start, and the cost of that first search that applies it.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
from _env import SHARED_DATA, pct, print_header
from bench_postgres import original_records, scaled

from citedocs.eval.beir import BeirData, load_beir
from citedocs.eval.metrics import ndcg_at_k
from citedocs.search.keyword import HEADING_WEIGHT, effective_terms, keyword_ranking
from citedocs.search.keyword_index import KeywordIndex
from citedocs.settings import Settings
from citedocs.store import ChunkRecord, DocumentRecord, SQLiteStore, Store, open_store

BATCH = 500


def build(store: Store, folder: Path, scale: int) -> dict[str, float]:
    """Write SciFact and `scale - 1` perturbed copies through `Store.replace_documents`, 500 per commit."""
    originals = original_records(load_beir(folder), Settings())
    source = store.add_source("folder", "beir", "beir://")
    batch = []
    docs = 0
    started = time.perf_counter()
    for doc, chunks, _ in scaled(originals, scale - 1):
        batch.append((doc, chunks))
        docs += 1
        if len(batch) >= BATCH:
            store.replace_documents(source.id, batch)
            batch = []
    store.replace_documents(source.id, batch)
    return {"docs": docs, "build_s": round(time.perf_counter() - started, 2)}


def cached_sqlite(cache: Path, folder: Path, scale: int) -> tuple[SQLiteStore, dict[str, float]]:
    path = cache / f"scifact-x{scale}.db"
    meta = path.with_suffix(".json")
    if path.exists() and meta.exists():
        return SQLiteStore(path), json.loads(meta.read_text(encoding="utf-8"))
    for old in cache.glob(path.name + "*"):
        old.unlink()
    store = SQLiteStore(path)
    info = build(store, folder, scale)
    meta.write_text(json.dumps(info), encoding="utf-8")
    return store, info


def rss_bytes() -> int:
    with open("/proc/self/statm", encoding="utf-8") as fh:
        return int(fh.read().split()[1]) * 4096


def doc_names(store: Store) -> dict[int, str]:
    rows = store._conn().execute(
        "SELECT c.id, d.rel_path FROM chunks c JOIN documents d ON d.id = c.document_id"
    )
    return {int(r[0]): str(r[1]).split("~")[0] for r in rows}


def ndcg(ranking: list[int], names: dict[int, str], qrels: dict[str, int]) -> float:
    ranked: dict[str, None] = {}
    for rowid in ranking:
        ranked.setdefault(names[rowid], None)
    return ndcg_at_k(list(ranked), qrels, 10)


def run_scale(store: Store, data: BeirData, fts_every: int) -> dict[str, Any]:
    names = doc_names(store)
    gc.collect()
    rss0 = rss_bytes()
    index = KeywordIndex(store, HEADING_WEIGHT)
    t0 = time.perf_counter()
    index.wait()
    memory_build_s = time.perf_counter() - t0
    memory_rss = rss_bytes() - rss0
    chunks = index.chunks
    # bm25s over the same tokens
    gc.collect()
    rss0 = rss_bytes()
    t0 = time.perf_counter()
    rowids: list[int] = []
    corpus: list[list[str]] = []
    with store.keyword_snapshot() as (_, rows):
        for rowid, _src, _fmt, heading, body in rows:
            rowids.append(rowid)
            corpus.append(store.keyword_terms(heading or "") + store.keyword_terms(body or ""))
    read_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    retriever = bm25s.BM25(k1=1.2, b=0.75)
    retriever.index(corpus, show_progress=False)
    bm25s_build_s = time.perf_counter() - t0
    del corpus
    gc.collect()
    bm25s_rss = rss_bytes() - rss0
    bm25s_bytes = sum(int(v.nbytes) for v in retriever.scores.values() if isinstance(v, np.ndarray))
    vocab = retriever.vocab_dict
    lat: dict[str, list[float]] = {"memory": [], "bm25s": [], "fts5": []}
    scores: dict[str, list[float]] = {"memory": [], "bm25s": [], "fts5": []}
    same = compared = 0
    queries = list(data.queries.items())
    for _qid, query in queries[:10]:  # warm-up
        keyword_ranking(store, query, 100, index=index)
    for n, (qid, query) in enumerate(queries):
        t0 = time.perf_counter()
        ours = keyword_ranking(store, query, 100, index=index)
        lat["memory"].append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        terms = effective_terms(store, query, index.document_counts)  # type: ignore[arg-type]
        tokens = [t for term in terms for t in store.keyword_terms(term) if t in vocab]
        peer: list[int] = []
        if tokens:
            docs, _ = retriever.retrieve([tokens], k=100, show_progress=False, n_threads=0)
            peer = [rowids[i] for i in docs[0]]
        lat["bm25s"].append((time.perf_counter() - t0) * 1000)
        scores["memory"].append(ndcg([r for r, _ in ours], names, data.qrels[qid]))
        scores["bm25s"].append(ndcg(peer, names, data.qrels[qid]))
        if n % fts_every == 0:
            t0 = time.perf_counter()
            fts = keyword_ranking(store, query, 100)
            lat["fts5"].append((time.perf_counter() - t0) * 1000)
            scores["fts5"].append(ndcg([r for r, _ in fts], names, data.qrels[qid]))
            compared += 1
            same += fts == ours
    out: dict[str, Any] = {
        "chunks": chunks,
        "memory_build_s": round(memory_build_s, 2),
        "memory_array_bytes_per_chunk": round(index.nbytes / max(chunks, 1)),
        "memory_rss_mb": round(memory_rss / 2**20),
        "bm25s_build_s": round(bm25s_build_s, 2),
        "bm25s_read_tokens_s": round(read_s, 2),
        "bm25s_array_bytes_per_chunk": round(bm25s_bytes / max(chunks, 1)),
        "bm25s_rss_mb": round(bm25s_rss / 2**20),
        "fts5_identical_rankings": f"{same}/{compared}",
    }
    for name in lat:
        out[f"{name}_p50_ms"] = round(statistics.median(lat[name]), 2)
        out[f"{name}_p95_ms"] = round(pct(lat[name], 95), 2)
        out[f"{name}_qps"] = round(1000 / statistics.mean(lat[name]), 1)
        out[f"{name}_ndcg@10"] = round(statistics.mean(scores[name]), 4)
        out[f"{name}_queries"] = len(lat[name])
    out["memory/bm25s_p50"] = round(out["memory_p50_ms"] / out["bm25s_p50_ms"], 2)
    out["incremental"] = incremental(store, index)
    return out


def incremental(store: Store, index: KeywordIndex, runs: int = 5) -> dict[str, float]:
    """Write one new document, then search for its unique word until it is found."""
    source = store.find_source("beir") or store.add_source("folder", "beir", "beir://")
    delays, writes, first, removes = [], [], [], []
    for n in range(runs):
        word = f"zqxnovel{n}{int(time.time())}"
        terms = f"{word} cell protein express"
        chunk = ChunkRecord(f"new{n}", 0, "", None, None, 1, 1, terms, f"{n:064d}", 4, "", terms)
        doc = DocumentRecord(f"beir://new-{word}", f"new-{word}", "text", 10, 0, None, "indexed")
        t0 = time.perf_counter()
        store.replace_document(source.id, doc, [chunk])
        writes.append((time.perf_counter() - t0) * 1000)
        while True:
            t1 = time.perf_counter()
            hits = keyword_ranking(store, word, 10, index=index)
            if hits:
                break
        done = time.perf_counter()
        first.append((done - t1) * 1000)
        delays.append((done - t0) * 1000)
        row = store.document_by_path(doc.path)
        assert row is not None and row[0].id is not None
        t0 = time.perf_counter()
        store.delete_documents([row[0].id])
        while keyword_ranking(store, word, 10, index=index):
            pass
        removes.append((time.perf_counter() - t0) * 1000)
    return {
        "write_ms_p50": round(statistics.median(writes), 2),
        "searchable_after_ms_p50": round(statistics.median(delays), 2),
        "first_search_applying_it_ms_p50": round(statistics.median(first), 2),
        "gone_after_delete_ms_p50": round(statistics.median(removes), 2),
        "served_from_memory": float(index.current() is not None),
    }


def run_postgres(folder: Path, scales: list[int], data: BeirData) -> dict[str, Any]:
    """PostgreSQL before (its SQL BM25) and after (the same in-memory index over its postings)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="citedocs-pg-kw-") as tmp:
        server = pgserver.get_server(Path(tmp), cleanup_mode="stop")
        try:
            for scale in scales:
                name = f"kw{scale}"
                server.psql(f"CREATE DATABASE {name};")
                store = open_store(server.get_uri(name))
                info = build(store, folder, scale)
                store._conn().execute("VACUUM ANALYZE")
                names = doc_names(store)
                index = KeywordIndex(store, HEADING_WEIGHT)
                t0 = time.perf_counter()
                index.wait()
                load_s = time.perf_counter() - t0
                lat: dict[str, list[float]] = {"sql": [], "memory": []}
                nd: dict[str, list[float]] = {"sql": [], "memory": []}
                same = 0
                for qid, query in data.queries.items():
                    t0 = time.perf_counter()
                    before = keyword_ranking(store, query, 100)
                    lat["sql"].append((time.perf_counter() - t0) * 1000)
                    t0 = time.perf_counter()
                    after = keyword_ranking(store, query, 100, index=index)
                    lat["memory"].append((time.perf_counter() - t0) * 1000)
                    nd["sql"].append(ndcg([r for r, _ in before], names, data.qrels[qid]))
                    nd["memory"].append(ndcg([r for r, _ in after], names, data.qrels[qid]))
                    same += [r for r, _ in before] == [r for r, _ in after]
                results[f"{scale}x"] = {
                    "chunks": index.chunks,
                    "build_s": info["build_s"],
                    "memory_load_s": round(load_s, 2),
                    "same_rankings": f"{same}/{len(data.queries)}",
                    **{f"{m}_p50_ms": round(statistics.median(v), 2) for m, v in lat.items()},
                    **{f"{m}_p95_ms": round(pct(v, 95), 2) for m, v in lat.items()},
                    **{f"{m}_ndcg@10": round(statistics.mean(v), 4) for m, v in nd.items()},
                }
                print(f"postgres {scale}x", json.dumps(results[f"{scale}x"]), flush=True)
                store.close()
        finally:
            server.cleanup()
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--folder", default=str(SHARED_DATA / "scifact"))
    parser.add_argument("--scales", default="1,10,100")
    parser.add_argument("--cache", default="/tmp/citedocs-kw-bench")
    parser.add_argument("--pg-scales", default="", help="e.g. 1,10: PostgreSQL before/after (pgserver)")
    parser.add_argument("--fts-sample", type=int, default=3, help="run FTS5 on every Nth query at 100x")
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    folder = Path(args.folder)
    data = load_beir(folder)
    print_header(
        "Keyword search at scale: citedocs in-memory BM25 vs FTS5 vs bm25s (same run; machine shared)"
    )
    results: dict[str, Any] = {}
    for scale in [int(s) for s in args.scales.split(",")]:
        store, info = cached_sqlite(cache, folder, scale)
        if not args.build_only:
            result = {
                "sqlite_build_s": info["build_s"],
                **run_scale(store, data, args.fts_sample if scale >= 100 else 1),
            }
            results[f"{scale}x"] = result
            print(f"{scale}x", json.dumps(result), flush=True)
        store.close()
    if args.pg_scales:
        results["postgres"] = run_postgres(folder, [int(s) for s in args.pg_scales.split(",")], data)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
