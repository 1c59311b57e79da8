"""Which fusion of keyword and semantic rankings to ship, measured, plus int8 vs float32 vector search.

    .venv/bin/python bench/studies/embedders.py                 # embeddings first (cached)
    .venv/bin/python bench/studies/fusion_study.py [--model minilm-int8] [--skip-claude] [--skip-vectors]

Parameters are tuned on SciFact *train* queries and reported on *test*; the winner is then checked on
claude-docs-qa (45 pages chunked by heading). Keyword side: bm25s + PyStemmer (stand-in for FTS5 BM25).
Results: bench/out/fusion_study.json.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections.abc import Callable, Hashable
from pathlib import Path

import bm25s
import numpy as np
import Stemmer
from embedders import CANDIDATES, EMB, OUT, REPO, evaluate, load_beir, ndcg_at

from citedocs.search.fusion import convex, rrf
from citedocs.search.vectors import VectorMatrix

CLAUDE_DOCS = REPO.parent / "shared" / "data" / "claude-docs-qa"
DEPTH = 100
Scored = list[tuple[str, float]]
Method = Callable[[Scored, Scored], list[tuple[Hashable, float]]]


def bm25_runs(doc_ids: list[str], texts: list[str], queries: list[str], depth: int = DEPTH) -> list[Scored]:
    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False
    )
    tokens = bm25s.tokenize(queries, stopwords="en", stemmer=stemmer, show_progress=False)
    rows, scores = retriever.retrieve(tokens, k=min(depth, len(texts)), show_progress=False, n_threads=0)
    return [
        [(doc_ids[j], float(s)) for j, s in zip(r, sc, strict=True) if s > 0]
        for r, sc in zip(rows, scores, strict=True)
    ]


def vector_runs(
    corpus: np.ndarray, queries: np.ndarray, doc_ids: list[str], depth: int = DEPTH
) -> list[Scored]:
    matrix = VectorMatrix(np.arange(len(doc_ids)), corpus)
    return [[(doc_ids[i], s) for i, s in matrix.top_k(q, depth)] for q in queries]


def methods() -> dict[str, Method]:
    found: dict[str, Method] = {
        "bm25": lambda kw, sem: list(kw),
        "semantic": lambda kw, sem: list(sem),
    }
    for k in (10, 20, 40, 60, 100):
        for w in (0.3, 0.4, 0.5, 0.6, 0.7):
            found[f"rrf k={k} w_sem={w}"] = lambda kw, sem, k=k, w=w: rrf(
                [[d for d, _ in kw], [d for d, _ in sem]], k=k, weights=[1 - w, w]
            )
    for norm in ("minmax", "zscore"):
        for w in (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8):
            found[f"convex {norm} w_sem={w}"] = lambda kw, sem, n=norm, w=w: convex(
                [kw, sem], weights=[1 - w, w], method=n
            )
    return found


def score_methods(
    kw_runs: list[Scored], sem_runs: list[Scored], qids: list[str], qrels: dict[str, dict[str, int]]
) -> dict[str, dict[str, float]]:
    results = {}
    for name, method in methods().items():
        run = {
            q: [str(d) for d, _ in method(kw, sem)]
            for q, kw, sem in zip(qids, kw_runs, sem_runs, strict=True)
        }
        results[name] = evaluate(run, qrels)
    return results


def paired_bootstrap(a: list[float], b: list[float], rounds: int = 2000) -> dict[str, float]:
    """Mean of a - b per query with a 95% bootstrap interval (queries resampled)."""
    diff = np.asarray(a) - np.asarray(b)
    rng = np.random.default_rng(0)
    means = diff[rng.integers(0, len(diff), (rounds, len(diff)))].mean(axis=1)
    return {
        "mean": float(diff.mean()),
        "lo": float(np.percentile(means, 2.5)),
        "hi": float(np.percentile(means, 97.5)),
    }


def per_query_ndcg(
    method: Method,
    kw_runs: list[Scored],
    sem_runs: list[Scored],
    qids: list[str],
    qrels: dict[str, dict[str, int]],
) -> list[float]:
    return [
        ndcg_at([str(d) for d, _ in method(kw, sem)], qrels[q])
        for q, kw, sem in zip(qids, kw_runs, sem_runs, strict=True)
        if q in qrels
    ]


def pick(results: dict[str, dict[str, float]], family: str) -> str:
    return max((n for n in results if n.startswith(family)), key=lambda n: results[n]["ndcg@10"])


def scifact_study(model: str, depth: int = DEPTH) -> dict[str, object]:
    doc_ids, texts, queries, qrels = load_beir()
    qids = sorted(set(qrels["test"]) | set(qrels.get("train", {})))
    corpus, qmat = np.load(EMB / f"{model}-corpus.npy"), np.load(EMB / f"{model}-queries.npy")
    started = time.perf_counter()
    kw_all = bm25_runs(doc_ids, texts, [queries[q] for q in qids], depth)
    bm25_s = time.perf_counter() - started
    sem_all = vector_runs(corpus, qmat, doc_ids, depth)
    by_split = {}
    for split in ("train", "test"):
        rows = [i for i, q in enumerate(qids) if q in qrels[split]]
        by_split[split] = score_methods(
            [kw_all[i] for i in rows], [sem_all[i] for i in rows], [qids[i] for i in rows], qrels[split]
        )
    train, test = by_split["train"], by_split["test"]
    chosen = {f: pick(train, f) for f in ("rrf k=60 w_sem=0.5", "rrf", "convex minmax", "convex zscore")}
    rows = [i for i, q in enumerate(qids) if q in qrels["test"]]
    kw_test, sem_test, q_test = [kw_all[i] for i in rows], [sem_all[i] for i in rows], [qids[i] for i in rows]
    every = methods()
    per_query = {n: per_query_ndcg(every[n], kw_test, sem_test, q_test, qrels["test"]) for n in every}
    best = pick(train, "")
    paired = {
        f"{best} - {other}": paired_bootstrap(per_query[best], per_query[other])
        for other in ("bm25", "semantic", "rrf k=60 w_sem=0.5", chosen["rrf"])
        if other != best
    }
    report = {
        name: {"train_ndcg@10": train[name]["ndcg@10"], **{f"test_{k}": v for k, v in test[name].items()}}
        for name in ["bm25", "semantic", *chosen.values()]
    }
    return {
        "model": model,
        "depth": depth,
        "bm25_index_and_query_s": bm25_s,
        "tuned_on_train": chosen,
        "best_on_train": best,
        "paired_test_ndcg@10_differences": paired,
        "report": report,
        "best_on_test_for_reference": pick(test, ""),
        "all_test_ndcg@10": {n: round(r["ndcg@10"], 4) for n, r in test.items()},
    }


def chunk_markdown(path: Path, max_words: int = 180) -> list[tuple[str, str]]:
    """(heading, text) pieces: split at #/## headings, then ~max_words windows with the heading on top."""
    pieces: list[tuple[str, str]] = []
    heading, lines = "", []
    title = ""

    def flush() -> None:
        words = " ".join(lines).split()
        for start in range(0, max(len(words), 1), max_words):
            window = " ".join(words[start : start + max_words])
            if window:
                pieces.append((heading, f"{title} — {heading}\n{window}"))

    for line in path.read_text(encoding="utf-8").splitlines():
        match = re.match(r"^(#{1,2})\s+(.*)", line)
        if match:
            flush()
            heading, lines = match.group(2).strip(), []
            if match.group(1) == "#":
                title = heading
        else:
            lines.append(line)
    flush()
    return pieces


def claude_docs_study(model: str, fusions: dict[str, Method]) -> dict[str, object]:
    docs = sorted((CLAUDE_DOCS / "docs").glob("*.md"))
    chunk_ids, chunk_texts, chunk_where = [], [], []
    for path in docs:
        for i, (heading, text) in enumerate(chunk_markdown(path)):
            chunk_ids.append(f"{path.name}#{i}")
            chunk_texts.append(text)
            chunk_where.append((path.name, heading.lower()))
    cases = [
        json.loads(line) for line in (CLAUDE_DOCS / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    questions = [c["question"] for c in cases]
    cache = EMB / f"{model}-claude-docs.npz"
    if cache.exists():
        saved = np.load(cache)
        corpus, qmat = saved["corpus"], saved["queries"]
    else:
        embedder = CANDIDATES[model]()
        corpus = embedder.embed_passages(chunk_texts)
        qmat = np.stack([embedder.embed_query(q) for q in questions])
        np.savez(cache, corpus=corpus, queries=qmat)
    kw_runs = bm25_runs(chunk_ids, chunk_texts, questions)
    sem_runs = vector_runs(corpus, qmat, chunk_ids)
    where = dict(zip(chunk_ids, chunk_where, strict=True))
    out: dict[str, object] = {"chunks": len(chunk_ids), "cases": len(cases)}
    for name, method in fusions.items():
        file_rr, file_r5, sec_r5, sec_ndcg = [], [], [], []
        for case, kw, sem in zip(cases, kw_runs, sem_runs, strict=True):
            ranked = [str(d) for d, _ in method(kw, sem)]
            files = {Path(e["file"]).name for e in case["evidence"]}
            sections = {(Path(e["file"]).name, e["heading"].lower()) for e in case["evidence"]}
            ranked_files = list(dict.fromkeys(where[d][0] for d in ranked))
            hit = next((i for i, f in enumerate(ranked_files) if f in files), None)
            file_rr.append(0.0 if hit is None else 1.0 / (hit + 1))
            file_r5.append(float(any(f in files for f in ranked_files[:5])))
            top_sections = list(dict.fromkeys(where[d] for d in ranked))
            sec_r5.append(len(set(top_sections[:5]) & sections) / len(sections))
            sec_ndcg.append(
                ndcg_at([f"{a}#{b}" for a, b in top_sections], {f"{a}#{b}": 1 for a, b in sections})
            )
        out[name] = {
            "file_mrr": float(np.mean(file_rr)),
            "file_recall@5": float(np.mean(file_r5)),
            "section_recall@5": float(np.mean(sec_r5)),
            "section_ndcg@10": float(np.mean(sec_ndcg)),
        }
    return out


def vectors_study(model: str, k: int = 10) -> dict[str, object]:
    corpus, queries = np.load(EMB / f"{model}-corpus.npy"), np.load(EMB / f"{model}-queries.npy")[:300]
    rng = np.random.default_rng(0)
    results: dict[str, object] = {}
    for rows in (len(corpus), 10_000):
        extra = corpus[rng.integers(0, len(corpus), rows - len(corpus))] if rows > len(corpus) else corpus[:0]
        noisy = extra + rng.normal(0, 0.02, extra.shape).astype(np.float32)
        matrix = np.concatenate([corpus, noisy / np.linalg.norm(noisy, axis=1, keepdims=True)])
        exact = VectorMatrix(np.arange(rows), matrix)
        for label, index in (("float32", exact), ("int8", VectorMatrix(np.arange(rows), matrix, int8=True))):
            started = time.perf_counter()
            tops = [index.top_k(q, k) for q in queries]
            ms = 1000 * (time.perf_counter() - started) / len(queries)
            truth = [{i for i, _ in exact.top_k(q, k)} for q in queries]
            recall = np.mean([len({i for i, _ in t} & s) / k for t, s in zip(tops, truth, strict=True)])
            results[f"{rows}x{matrix.shape[1]} {label}"] = {
                "query_ms": round(ms, 3),
                f"recall@{k}_vs_float32": float(recall),
                "mbytes": round(index.nbytes / 1e6, 2),
            }
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="minilm-int8")
    parser.add_argument("--skip-claude", action="store_true")
    parser.add_argument("--skip-vectors", action="store_true")
    parser.add_argument("--depth", type=int, default=DEPTH, help="candidates taken from each list")
    args = parser.parse_args()
    study: dict[str, object] = {"scifact": scifact_study(args.model, args.depth)}
    print(json.dumps(study["scifact"]["report"], indent=1))  # type: ignore[index]
    if not args.skip_claude:
        all_methods = methods()
        tuned = study["scifact"]["tuned_on_train"]  # type: ignore[index]
        names = ["bm25", "semantic", *dict.fromkeys(tuned.values())]
        study["claude_docs"] = claude_docs_study(args.model, {n: all_methods[n] for n in names})
        print(json.dumps(study["claude_docs"], indent=1))
    if not args.skip_vectors:
        study["vectors"] = vectors_study(args.model)
        print(json.dumps(study["vectors"], indent=1))
    suffix = "" if args.depth == DEPTH else f"-depth{args.depth}"
    (OUT / f"fusion_study-{args.model}{suffix}.json").write_text(
        json.dumps(study, indent=1), encoding="utf-8"
    )


if __name__ == "__main__":
    main()
