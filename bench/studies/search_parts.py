"""Where a `Citedocs.search` call with the front ends' defaults spends its time, part by part, beside bm25s.

    PYTHONPATH=src .venv/bin/python bench/studies/search_parts.py /tmp/sp/kw/scifact-x1.db

For every SciFact question (the first 50 warm the caches and are left out): the whole call, then each part
alone as the call runs it (the query's terms for snippets, the keyword ranking with its query analysis, reading
the first 5 chunks, their sketches, the duplicate filter, the 5 hits with their snippets), and bm25s at its best
(bench_search_path's peer). Mean wall time (time.perf_counter) a question, in microseconds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _env import SHARED_DATA, print_header
from bench_search_path import bm25s_over, keyword_app, peer_search

from citedocs.eval.beir import load_beir
from citedocs.search.distinct import PASSAGE_OVERLAP, distinct_indexes
from citedocs.search.engine import hit_from_chunk
from citedocs.search.keyword import keyword_ranking
from citedocs.text.analyzer import query_terms


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("db")
    args = parser.parse_args()
    print_header("A library search, part by part, beside bm25s")
    queries = list(load_beir(SHARED_DATA / "scifact").queries.values())
    with keyword_app(args.db) as app:
        retriever, _, _ = bm25s_over(app.store)
        engine, store = app.engine, app.store
        spent: dict[str, list[float]] = {}

        def timed(name: str, call: Callable[[], Any]) -> Any:
            start = time.perf_counter()
            value = call()
            spent.setdefault(name, []).append((time.perf_counter() - start) * 1e6)
            return value

        def one(query: str) -> None:
            timed("whole call", lambda: app.search(query, distinct=True))
            terms = timed("query terms (snippets)", lambda: query_terms(query))
            ranking = timed(
                "keyword ranking", lambda: keyword_ranking(store, query, 10, index=engine.keyword)
            )
            found = timed("read 5 chunks", lambda: engine._chunks(ranking[:5]))
            sketches = timed("their sketches", lambda: engine._sketches(found))
            texts = [c.text for c, _ in found]
            timed("duplicate filter", lambda: distinct_indexes(texts, 5, PASSAGE_OVERLAP, sketches))
            timed("5 hits + snippets", lambda: [hit_from_chunk(c, s, terms) for c, s in found])
            timed("bm25s", lambda: peer_search(store, retriever, query))

        for query in queries:
            one(query)
        for name, values in spent.items():
            print(f"{name:24s} {statistics.mean(values[50:]):7.1f} us")


if __name__ == "__main__":
    main()
