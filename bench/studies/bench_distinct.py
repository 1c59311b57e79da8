"""Search results without repeats: how many top-k lists held one, what an agent reads, what it costs in time.

    PYTHONPATH=src .venv/bin/python bench/studies/bench_distinct.py --index-db /tmp/idx.db --cases ../shared/data/claude-docs-qa/cases.jsonl

Over every case question on claude-docs (indexed into --index-db on the first run, hybrid search as the front
ends run it): the raw ranking (what `Citedocs.search` returns to evaluations and the answer service) against the
front ends' `distinct=True` (a passage whose content terms a better one covers >= CITEDOCS_PASSAGE_OVERLAP is
left out and the next takes its place), interleaved per question and round. "Distinct passages" counts the hits
of a list that repeat none above them; "tokens" is the estimate of the hits' text an agent reads.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from _env import header

from citedocs.eval.cases import load_cases
from citedocs.search.distinct import PASSAGE_OVERLAP, repeats
from citedocs.service import Citedocs
from citedocs.settings import Settings
from citedocs.text.tokens import estimate_tokens

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "data" / "claude-docs-qa" / "docs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index-db", type=Path, required=True)
    parser.add_argument("--cases", action="append", type=Path, required=True)
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    for key, value in header().items():
        print(f"{key}: {value}")
    app = Citedocs(Settings(db=str(args.index_db)))
    try:
        source = app.add_folder(CORPUS)
        app.index(source.name)
        app.wait_for_embeddings()
        overlap = PASSAGE_OVERLAP
        questions = [case.question for case in load_cases(*args.cases) if case.kind == "answerable"]
        for question in questions:  # warm the model and the caches
            app.search(question, k=args.k, wait_for_model=True)
        ms: dict[bool, list[float]] = {False: [], True: []}
        listed: dict[bool, list[int]] = {False: [], True: []}
        tokens: dict[bool, list[int]] = {False: [], True: []}
        with_repeat = 0
        for round_ in range(args.rounds):
            for n, question in enumerate(questions):
                order = (False, True) if (n + round_) % 2 == 0 else (True, False)
                for distinct in order:
                    started = time.perf_counter()
                    hits = app.search(question, k=args.k, distinct=distinct).hits
                    ms[distinct].append((time.perf_counter() - started) * 1000.0)
                    if round_ == 0:
                        listed[distinct].append(len(hits) - len(repeats(hits, overlap)))
                        tokens[distinct].append(sum(estimate_tokens(h.text) for h in hits))
                        with_repeat += bool(not distinct and repeats(hits, overlap))
        print(f"questions: {len(questions)} · k {args.k} · overlap {overlap} · rounds {args.rounds}")
        print(f"raw top-{args.k} lists holding a repeat: {with_repeat} of {len(questions)}")
        print("| search | distinct passages (mean of k) | tokens of hit text (P50) | ms P50 | ms P95 |")
        print("|---|---|---|---|---|")
        for distinct in (False, True):
            p95 = statistics.quantiles(ms[distinct], n=20)[-1]
            print(
                f"| {'distinct (front ends)' if distinct else 'raw ranking'} | "
                f"{statistics.mean(listed[distinct]):.2f} | {statistics.median(tokens[distinct]):,.0f} | "
                f"{statistics.median(ms[distinct]):.1f} | {p95:.1f} |"
            )
    finally:
        app.close()


if __name__ == "__main__":
    main()
