"""Which passage comes first (issue 47): section@5 and file@5 on the English and Japanese dev sets, and the
query latency, for the code this script is run with.

    .venv/bin/python bench/bench_ranking.py [--modes keyword,hybrid] [--sets NAME,...] [--out FILE.json]

Run it once on the branch and once on the code before it (`PYTHONPATH=/path/to/old/src`) to compare; the
SciFact nDCG@10 check is bench/bench_beir.py. claude-docs-qa: 45 English pages, 60 questions; the Japanese set:
the Japanese Debian Developers' Reference, 30 answerable questions asked in Japanese. Figures are means over
the questions; latency is the median of one search per question after a warm-up pass.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from _env import SHARED_DATA, print_header

import citedocs
from citedocs.eval.cases import load_cases
from citedocs.eval.retrieval import run_retrieval_eval
from citedocs.service import Citedocs
from citedocs.settings import Settings

SETS = {
    "claude-docs (en)": SHARED_DATA / "claude-docs-qa",
    "ja-developers-reference": SHARED_DATA / "ja-developers-reference",
}
METRICS = ("file_recall@5", "section_recall@5", "section_recall@1", "mrr")


def _cell(result: dict[str, Any], metric: str) -> float | None:
    cell = result.get(metric)
    return float(cell["mean"]) if isinstance(cell, dict) else cell


def run(name: str, data: Path, mode: str, tmp: Path) -> dict[str, Any]:
    corpus = data / "docs"
    cases = load_cases(data / "cases.jsonl")
    embedder = "none" if mode == "keyword" else "auto"
    settings = Settings(db=str(tmp / f"{name[:2]}-{mode}.sqlite3"), embedder=embedder)
    app = Citedocs(settings)
    try:
        app.add_folder(corpus)
        app.index()
        app.wait_for_embeddings()
        run_retrieval_eval(corpus, cases, settings, mode=mode, app=app)  # warm-up pass
        result = run_retrieval_eval(corpus, cases, settings, mode=mode, app=app)
        chunks = app.store.counts().get("chunks")
    finally:
        app.close()
    row: dict[str, Any] = {"set": name, "mode": mode, "chunks": chunks}
    row.update({m: _cell(result, m) for m in METRICS})
    row["query_ms_p50"] = result.get("query_ms_p50")
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--modes", default="keyword,hybrid")
    parser.add_argument("--sets", default=",".join(SETS), help="comma-separated names of SETS")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    print_header("Ranking: section@5 and file@5 on the dev sets (issue 47)")
    print("citedocs from", Path(citedocs.__file__).parent)
    rows = []
    with tempfile.TemporaryDirectory(prefix="citedocs-ranking-") as tmp:
        for mode in args.modes.split(","):
            for name in args.sets.split(","):
                data = SETS[name]
                row = run(name, data, mode, Path(tmp))
                rows.append(row)
                print(json.dumps(row), flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
