"""What the snippets cost of a `Citedocs.search` call with the front ends' defaults: the same call with the
snippet function replaced by one that returns "" (a study; the product always makes them), beside bm25s.

    PYTHONPATH=src .venv/bin/python bench/studies/snippet_share.py /tmp/sp/kw/scifact-x1.db

Every SciFact question three times, each call's CPU time (time.process_time), interleaved question by
question; the first 300 calls warm the caches and are left out. Mean CPU microseconds a call.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _env import SHARED_DATA, print_header
from bench_search_path import bm25s_over, keyword_app, peer_search

import citedocs.search.engine as engine_module
from citedocs.eval.beir import load_beir


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("db")
    args = parser.parse_args()
    print_header("The snippets' share of a library search, beside bm25s")
    queries = list(load_beir(SHARED_DATA / "scifact").queries.values())
    real = engine_module.make_snippet
    spent: dict[str, list[float]] = {"whole call": [], "without snippets": [], "bm25s": []}
    with keyword_app(args.db) as app:
        retriever, _, _ = bm25s_over(app.store)
        for _ in range(3):
            for query in queries:
                engine_module.make_snippet = real
                started = time.process_time()
                app.search(query, distinct=True)
                spent["whole call"].append(time.process_time() - started)
                engine_module.make_snippet = lambda text, terms: ""
                started = time.process_time()
                app.search(query, distinct=True)
                spent["without snippets"].append(time.process_time() - started)
                started = time.process_time()
                peer_search(app.store, retriever, query)
                spent["bm25s"].append(time.process_time() - started)
        engine_module.make_snippet = real
    peer = statistics.mean(spent["bm25s"][300:])
    for name, values in spent.items():
        mean = statistics.mean(values[300:])
        print(f"{name:18s} {mean * 1e6:7.1f} us  {mean / peer:5.2f}x bm25s")


if __name__ == "__main__":
    main()
