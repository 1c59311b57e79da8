"""Snippet cost and sameness: `make_snippet` now against a git revision's, on the same hits, interleaved.

    nice -n 10 .venv/bin/python bench/bench_snippets.py [--base HEAD~1] [--queries 300] [--rounds 5]

- SciFact (English): per query, the 5 passages sharing the most rare query terms (a small in-memory
  ranking, no index needed); every snippet must be identical to the base revision's (printed as same/total).
- Japanese (ja-developers-reference): the manual indexed into a temporary SQLite file, the top 5 keyword hits
  of every question in cases.jsonl and of `重要度`, `メンテナンス`; how many snippets mark a word, before/after.

CPU time (time.process_time) per snippet, median of `--rounds` interleaved rounds, with the cache of analysed
CJK runs emptied before each (the cost for passages not seen before); the machine may be shared.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

from _env import SHARED_DATA, print_header

REPO = Path(__file__).resolve().parents[1]


def base_module(rev: str) -> ModuleType:
    source = subprocess.run(
        ["git", "show", f"{rev}:src/citedocs/search/snippets.py"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "base_snippets.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("base_snippets", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["base_snippets"] = module  # dataclasses look their module up while it runs
    spec.loader.exec_module(module)
    return module


def scifact_pairs(n_queries: int) -> list[tuple[str, list[str]]]:
    from citedocs.text.analyzer import query_terms, terms

    data = SHARED_DATA / "scifact"
    docs = [json.loads(line) for line in (data / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    texts = [d["text"] for d in docs]
    postings: dict[str, set[int]] = {}
    for i, text in enumerate(texts):
        for term in set(terms(text)):
            postings.setdefault(term, set()).add(i)
    queries = [
        json.loads(line)["text"] for line in (data / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    out = []
    for query in queries[:n_queries]:
        wanted = query_terms(query)
        scores: Counter[int] = Counter()
        for term in wanted:
            found = postings.get(term, set())
            for i in found:
                scores[i] += 1.0 / (1 + len(found))
        for i, _ in scores.most_common(5):
            out.append((texts[i], wanted))
    return out


def japanese_pairs() -> list[tuple[str, list[str]]]:
    from citedocs.service import Citedocs
    from citedocs.settings import Settings
    from citedocs.text.analyzer import query_terms

    data = SHARED_DATA / "ja-developers-reference"
    questions = [
        json.loads(line)["question"]
        for line in (data / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    questions += ["重要度", "メンテナンス"]
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        app = Citedocs(Settings(db=str(Path(tmp) / "index.sqlite3"), embedder="none"))
        try:
            app.add_folder(data / "docs")
            app.index()
            for question in questions:
                for hit in app.search(question, k=5, mode="keyword").hits:
                    out.append((hit.text, query_terms(question)))
        finally:
            app.close()
    return out


def timed(make: Any, pairs: list[tuple[str, list[str]]]) -> tuple[float, list[str]]:
    start = time.process_time()
    snippets = [make(text, wanted) for text, wanted in pairs]
    return (time.process_time() - start) / len(pairs) * 1e6, snippets


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", default="HEAD~1", help="the git revision to compare with")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print_header("snippets: now vs " + args.base)
    from citedocs.search.snippets import make_snippet
    from citedocs.text.cjk import cjk_spans

    base = base_module(args.base).make_snippet
    sets = {"scifact": scifact_pairs(args.queries), "japanese": japanese_pairs()}
    report: dict[str, Any] = {}
    for name, pairs in sets.items():
        times: dict[str, list[float]] = {"base": [], "now": []}
        snippets: dict[str, list[str]] = {}
        for _ in range(args.rounds):
            for label, make in (("base", base), ("now", make_snippet)):
                cjk_spans.cache_clear()  # every round pays for its SudachiPy analysis: the cost of new passages
                us, snippets[label] = timed(make, pairs)
                times[label].append(us)
        same = sum(a == b for a, b in zip(snippets["base"], snippets["now"], strict=True))
        report[name] = {
            "snippets": len(pairs),
            "identical": f"{same}/{len(pairs)}",
            "marked_base": sum("**" in s for s in snippets["base"]),
            "marked_now": sum("**" in s for s in snippets["now"]),
            "us_per_snippet_base_median": round(statistics.median(times["base"]), 1),
            "us_per_snippet_now_median": round(statistics.median(times["now"]), 1),
        }
    json.dump(report, sys.stdout, indent=2, ensure_ascii=False)
    print()


if __name__ == "__main__":
    main()
