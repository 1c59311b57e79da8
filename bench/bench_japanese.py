"""Japanese retrieval: what each part of the CJK analysis and the embedder choice contributes, beside English.

    .venv/bin/python bench/bench_japanese.py [--skip-e5] [--out bench/out/japanese.json]

One process. On ../shared/data/ja-developers-reference (the Japanese Debian Developers' Reference, 30
answerable questions asked in Japanese) it runs keyword and hybrid search under each tokenizer (character
bigrams, SudachiPy) and embedder (the packaged English MiniLM, multilingual e5, and "auto", which picks), and the
peer bm25s with its default tokenizer and with the same bigrams on the same chunks. Then the English
claude-docs-qa set under the default settings, for "English unchanged" and for indexing speed side by side.
Figures are means with bootstrap 95% intervals over the questions; speeds are documents and characters per
second of one indexing run (keyword, then embedding).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

import bm25s
from _env import SHARED_DATA, header, print_header

from citedocs.eval.cases import load_cases
from citedocs.eval.metrics import file_name
from citedocs.eval.retrieval import run_retrieval_eval
from citedocs.service import Citedocs
from citedocs.settings import Settings
from citedocs.text import cjk
from citedocs.text.analyzer import terms

REPO = Path(__file__).resolve().parents[1]
METRICS = ("file_recall@1", "file_recall@5", "section_recall@1", "section_recall@5", "mrr")
JA = SHARED_DATA / "ja-developers-reference"
EN = SHARED_DATA / "claude-docs-qa"


def _index(corpus: Path, settings: Settings) -> tuple[Citedocs, dict[str, float]]:
    app = Citedocs(settings)
    app.add_folder(corpus)
    t0 = time.perf_counter()
    app.index()
    keyword_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    app.wait_for_embeddings()
    embed_s = time.perf_counter() - t0
    docs = app.store.counts()["indexed"]
    chars = sum(p.stat().st_size for p in corpus.rglob("*") if p.is_file())
    return app, {"docs": docs, "bytes": chars, "keyword_s": round(keyword_s, 2), "embed_s": round(embed_s, 2)}


def _row(name: str, result: dict[str, Any], speed: dict[str, float] | None = None) -> dict[str, Any]:
    row: dict[str, Any] = {"config": name}
    for metric in METRICS:
        cell = result.get(metric)
        if isinstance(cell, dict):
            row[metric] = f"{cell['mean']:.3f} [{cell['ci95'][0]:.2f}, {cell['ci95'][1]:.2f}]"
        elif cell is not None:
            row[metric] = f"{cell:.3f}"
    row["query_ms_p50"] = result.get("query_ms_p50")
    if speed:
        row.update(speed)
    return row


def citedocs_config(
    name: str, corpus: Path, cases: list[Any], tmp: Path, *, segmenter: str, embedder: str, mode: str
) -> dict[str, Any]:
    settings = Settings(
        db=str(tmp / f"{len(list(tmp.iterdir()))}.sqlite3"), embedder=embedder, cjk_segmenter=segmenter
    )
    app, speed = _index(corpus, settings)
    try:
        name = f"{name} [{app.embedder.name}]" if app.embedder is not None and mode != "keyword" else name
        result = run_retrieval_eval(corpus, cases, settings, mode=mode, app=app)
    finally:
        app.close()
        cjk.configure("auto")
    return _row(name, result, speed)


def bm25s_config(name: str, db: Path, cases: list[Any], tokenize: Any) -> dict[str, Any]:
    """The peer over citedocs' own chunks (same passages, so only the ranking differs)."""
    rows = (
        sqlite3.connect(db)
        .execute("SELECT d.path, c.heading, c.text FROM chunks c JOIN documents d ON d.id = c.document_id")
        .fetchall()
    )
    retriever = bm25s.BM25()
    retriever.index([tokenize(f"{h}\n{t}") for _, h, t in rows], show_progress=False)
    scores: dict[str, list[float]] = {m: [] for m in ("file_recall@1", "file_recall@5", "mrr")}
    for case in cases:
        if not case.answerable:
            continue
        found, _ = retriever.retrieve([tokenize(case.question)], k=min(50, len(rows)), show_progress=False)
        files = [file_name(rows[i][0]) for i in found[0]]
        wanted = {file_name(e.file) for e in case.evidence}
        scores["file_recall@1"].append(float(bool(wanted & set(files[:1]))))
        scores["file_recall@5"].append(len(wanted & set(files[:5])) / len(wanted))
        rank = next((n for n, f in enumerate(files, 1) if f in wanted), None)
        scores["mrr"].append(1.0 / rank if rank else 0.0)
    return {"config": name, **{m: f"{sum(v) / len(v):.3f}" for m, v in scores.items()}}


def _default_tokens(text: str) -> list[str]:
    return list(bm25s.tokenize([text], show_progress=False, return_ids=False)[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--skip-e5", action="store_true", help="leave out the (slow) multilingual embedder runs"
    )
    parser.add_argument("--out", type=Path, help="write the rows as JSON here")
    args = parser.parse_args()
    print_header("Japanese retrieval: tokenizer and embedder, beside English")
    ja_cases = load_cases(JA / "cases.jsonl")
    en_cases = load_cases(EN / "cases.jsonl", REPO / "eval/cases/claude-docs-key-facts.jsonl")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="citedocs-ja-") as name:
        tmp = Path(name)
        ja = JA / "docs"
        rows.append(
            citedocs_config(
                "ja keyword, bigrams", ja, ja_cases, tmp, segmenter="bigram", embedder="none", mode="keyword"
            )
        )
        rows.append(
            citedocs_config(
                "ja keyword, SudachiPy",
                ja,
                ja_cases,
                tmp,
                segmenter="sudachi",
                embedder="none",
                mode="keyword",
            )
        )
        peer_db = tmp / "peer.sqlite3"
        app = Citedocs(Settings(db=str(peer_db), embedder="none"))
        app.add_folder(ja)
        app.index()
        app.close()
        rows.append(
            bm25s_config("ja bm25s (peer), its default tokenizer", peer_db, ja_cases, _default_tokens)
        )
        cjk.configure("bigram")  # once for the whole peer run: each switch empties the word cache
        try:
            rows.append(bm25s_config("ja bm25s (peer), citedocs' bigrams", peer_db, ja_cases, terms))
        finally:
            cjk.configure("auto")
        rows.append(
            citedocs_config(
                "ja hybrid, SudachiPy + MiniLM",
                ja,
                ja_cases,
                tmp,
                segmenter="sudachi",
                embedder="local",
                mode="hybrid",
            )
        )
        if not args.skip_e5:
            rows.append(
                citedocs_config(
                    "ja hybrid, bigrams + e5",
                    ja,
                    ja_cases,
                    tmp,
                    segmenter="bigram",
                    embedder="local:e5",
                    mode="hybrid",
                )
            )
            rows.append(
                citedocs_config(
                    "ja hybrid, default (auto)",
                    ja,
                    ja_cases,
                    tmp,
                    segmenter="auto",
                    embedder="auto",
                    mode="hybrid",
                )
            )
        en = EN / "docs"
        rows.append(
            citedocs_config(
                "en keyword, default", en, en_cases, tmp, segmenter="auto", embedder="none", mode="keyword"
            )
        )
        rows.append(
            citedocs_config(
                "en hybrid, default (auto)",
                en,
                en_cases,
                tmp,
                segmenter="auto",
                embedder="auto",
                mode="hybrid",
            )
        )
    columns = ["config", *METRICS, "query_ms_p50", "docs", "bytes", "keyword_s", "embed_s"]
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        print("| " + " | ".join(str(row.get(c, "")) for c in columns) + " |")
    print()
    for row in rows:
        if row.get("keyword_s"):
            kw = row["docs"] / max(row["keyword_s"], 1e-9)
            emb = row["docs"] / max(row["keyword_s"] + row["embed_s"], 1e-9)
            print(
                f"- {row['config']}: {kw:.1f} docs/s keyword-only ({row['bytes'] / max(row['keyword_s'], 1e-9) / 1e6:.2f} MB/s), "
                f"{emb:.1f} docs/s with embeddings"
            )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"header": header(), "rows": rows}, ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()
