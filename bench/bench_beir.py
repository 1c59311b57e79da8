"""SciFact (or any BEIR set) through citedocs' production pipeline, beside bm25s in the same process run.

    .venv/bin/python bench/bench_beir.py [../shared/data/scifact] [--modes bm25,hybrid] [--out bench/out/beir.json]

citedocs figures come from `citedocs.eval.beir.run_beir` (the code behind `citedocs bench beir`); the peer is bm25s
with the same Snowball stemmer and English stopwords, indexed and queried on the same documents and queries.
Query throughput is single-threaded, one query at a time, for both.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import bm25s
import Stemmer
from _env import SHARED_DATA, header, median, pct, print_header

from citedocs.eval.beir import load_beir, run_beir
from citedocs.eval.metrics import mrr_at_k, ndcg_at_k, recall_at_k
from citedocs.settings import Settings


def run_bm25s(folder: Path) -> dict[str, float]:
    data = load_beir(folder)
    ids = list(data.corpus)
    texts = [f"{t}\n{b}" for t, b in data.corpus.values()]
    stemmer = Stemmer.Stemmer("english")
    t0 = time.perf_counter()
    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False
    )
    index_s = time.perf_counter() - t0
    ndcg, recall, mrr, lat = [], [], [], []
    for qid, query in data.queries.items():
        t0 = time.perf_counter()
        tokens = bm25s.tokenize([query], stopwords="en", stemmer=stemmer, show_progress=False)
        docs, _ = retriever.retrieve(tokens, k=100, show_progress=False, n_threads=0)
        lat.append((time.perf_counter() - t0) * 1000)
        ranked = [ids[i] for i in docs[0]]
        ndcg.append(ndcg_at_k(ranked, data.qrels[qid], 10))
        recall.append(recall_at_k(ranked, data.qrels[qid], 100))
        mrr.append(mrr_at_k(ranked, data.qrels[qid], 10))
    n = len(lat)
    return {
        "ndcg@10": round(sum(ndcg) / n, 4),
        "recall@100": round(sum(recall) / n, 4),
        "mrr@10": round(sum(mrr) / n, 4),
        "index_seconds": round(index_s, 2),
        "query_ms_p50": round(median(lat), 2),
        "query_ms_p95": round(pct(lat, 95), 2),
        "qps": round(1000 / median(lat), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", nargs="?", default=str(SHARED_DATA / "scifact"))
    parser.add_argument("--modes", default="bm25,hybrid")
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    folder = Path(args.folder)
    print_header(f"BEIR {folder.name}: citedocs vs bm25s (same run)")
    rows: dict[str, dict[str, object]] = {"bm25s (peer)": dict(run_bm25s(folder))}
    for mode in args.modes.split(","):
        result = run_beir(folder, Settings(), mode=mode)
        result["qps"] = round(1000 / result["query_ms_p50"], 1)
        rows[f"citedocs {mode}"] = result
    cols = ["ndcg@10", "recall@100", "mrr@10", "index_seconds", "query_ms_p50", "query_ms_p95", "qps"]
    print("| system | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for name, row in rows.items():
        print(f"| {name} | " + " | ".join(str(row.get(c, "")) for c in cols) + " |")
    peer = rows["bm25s (peer)"]
    ours = rows.get("citedocs bm25")
    if ours:
        print(
            f"\nkeyword nDCG@10 ratio citedocs/bm25s: {float(ours['ndcg@10']) / float(peer['ndcg@10']):.3f}; "  # type: ignore[arg-type]
            f"query QPS ratio: {float(ours['qps']) / float(peer['qps']):.2f}"
        )  # type: ignore[arg-type]
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps({"header": header(), "rows": rows}, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
