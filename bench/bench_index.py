"""Keyword-only indexing and query speed, beside docsonar's published figures.

    .venv/bin/python bench/bench_index.py [--repeat 3]

docsonar (Intel Core Ultra 5 125U laptop, 200 md files / 600 chunks): index keyword-only 0.7 s, no-change
reindex 0.03 s, keyword search median 8.9 ms.
"""

from __future__ import annotations

import argparse
import random
import shutil
import tempfile
import time
from pathlib import Path

from _env import SHARED_DATA, median, pct, print_header

from citedocs.service import Citedocs
from citedocs.settings import Settings

DOCSONAR = {"index_200": 0.7, "noop_200": 0.03, "query_ms": 8.9}
WORDS = [
    "install",
    "configure",
    "server",
    "client",
    "request",
    "response",
    "token",
    "stream",
    "index",
    "search",
    "query",
    "cache",
    "timeout",
    "retry",
    "folder",
    "file",
    "page",
    "heading",
    "model",
    "embed",
    "vector",
    "keyword",
    "database",
    "schema",
    "migration",
    "backup",
    "restore",
    "error",
    "port",
    "host",
    "proxy",
    "certificate",
    "upload",
    "download",
    "version",
    "release",
    "feature",
    "deprecate",
    "plugin",
]


def synth_corpus(root: Path, files: int = 200, seed: int = 7) -> None:
    """200 markdown files of ~3 sections each (docsonar's shape: 600 chunks)."""
    rng = random.Random(seed)
    for i in range(files):
        parts = [f"# Topic {i}: {rng.choice(WORDS)} {rng.choice(WORDS)}\n"]
        for s in range(3):
            para = " ".join(rng.choice(WORDS) for _ in range(220))
            parts.append(f"## Section {s} {rng.choice(WORDS)}\n\n{para}.\n")
        (root / f"doc_{i:03}.md").write_text("\n".join(parts), encoding="utf-8")


def run_corpus(name: str, folder: Path, queries: list[str], repeat: int) -> dict[str, float]:
    index_s, noop_s, q_ms = [], [], []
    files = chunks = 0
    for _ in range(repeat):
        tmp = Path(tempfile.mkdtemp())
        app = Citedocs(Settings(db=str(tmp / "i.db"), embedder="none"))
        app.add_folder(folder)
        t0 = time.perf_counter()
        [report] = app.index()
        index_s.append(time.perf_counter() - t0)
        files = report.total
        chunks = app.store.counts()["chunks"]
        t0 = time.perf_counter()
        app.index()
        noop_s.append(time.perf_counter() - t0)
        for q in queries:
            t0 = time.perf_counter()
            app.search(q, k=10, mode="keyword")
            q_ms.append((time.perf_counter() - t0) * 1000)
        app.close()
        shutil.rmtree(tmp)
    row = {
        "files": files,
        "chunks": chunks,
        "index_s": median(index_s),
        "files_per_s": files / median(index_s),
        "noop_s": median(noop_s),
        "query_p50_ms": median(q_ms),
        "query_p95_ms": pct(q_ms, 95),
    }
    print(
        f"| {name} | {files} | {chunks} | {row['index_s']:.2f} s ({row['files_per_s']:.0f} files/s) | "
        f"{row['noop_s'] * 1000:.1f} ms | {row['query_p50_ms']:.2f} / {row['query_p95_ms']:.2f} ms |"
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print_header("citedocs keyword indexing and search")
    print("| corpus | files | chunks | index (median) | no-change reindex | keyword query P50 / P95 |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        synth = Path(tmp) / "synth"
        synth.mkdir()
        synth_corpus(synth)
        queries = [f"{a} {b}" for a, b in zip(WORDS, reversed(WORDS), strict=False)] * 3
        row = run_corpus("synthetic 200 md (docsonar's shape)", synth, queries, args.repeat)
    claude = SHARED_DATA / "claude-docs-qa" / "docs"
    if claude.exists():
        import json

        cases = [
            json.loads(line)["question"] for line in (claude.parent / "cases.jsonl").open(encoding="utf-8")
        ]
        run_corpus("claude-docs (45 md)", claude, cases, args.repeat)
    fixtures = SHARED_DATA / "parser-fixtures"
    if fixtures.exists():
        run_corpus(
            "parser-fixtures (pdf/docx/html)",
            fixtures,
            ["FedRAMP OSCAL", "python classes", "invoice"] * 10,
            args.repeat,
        )
    print()
    print(
        "docsonar, published (laptop, 200 md / 600 chunks): index 0.7 s, no-change 0.03 s, keyword 8.9 ms median"
    )
    print(
        f"ratio on the synthetic corpus: index {DOCSONAR['index_200'] / row['index_s']:.1f}x, "
        f"no-change {DOCSONAR['noop_200'] / row['noop_s']:.1f}x, query {DOCSONAR['query_ms'] / row['query_p50_ms']:.1f}x "
        "(>1 means citedocs is faster; different hardware)"
    )


if __name__ == "__main__":
    main()
