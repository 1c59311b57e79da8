"""The in-memory BM25 ranking now against a git revision's (search/impacts.py), on the same queries, interleaved.

    PYTHONPATH=src .venv/bin/python bench/studies/rank_versions.py --base 50b66eb /tmp/sp/kw/scifact-x1.db
    PYTHONPATH=src .venv/bin/python bench/studies/rank_versions.py --base 50b66eb /tmp/sp/kw/scifact-x10.db

Every SciFact question's index terms (and, for 50 of them, the same with two terms repeated) are ranked by
both for k 1, 5, 10 and 50 and must give the same rowids and scores; then two interleaved rounds over the 300
questions at k 10 (each first on every other question), mean wall time a ranking.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _env import SHARED_DATA, print_header
from bench_search_path import keyword_app

from citedocs.eval.beir import load_beir
from citedocs.search import impacts
from citedocs.search.keyword import effective_terms


def base_module(revision: str, folder: Path) -> object:
    source = subprocess.run(
        ["git", "show", f"{revision}:src/citedocs/search/impacts.py"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    path = folder / "impacts_base.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("impacts_base", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["impacts_base"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("db")
    parser.add_argument("--base", required=True, help="git revision to compare with")
    args = parser.parse_args()
    print_header(f"Keyword ranking now vs {args.base}: same results, time a ranking")
    queries = list(load_beir(SHARED_DATA / "scifact").queries.values())
    with keyword_app(args.db) as app:
        view = app.engine.keyword.view()
        assert view is not None
        store = app.store
        terms = [
            [store.keyword_terms(t)[0] for t in effective_terms(store, q, view.document_counts)]
            for q in queries
        ]
        terms += [t + t[:2] for t in terms[:50]]
        segments, stats = view.state.segments, view.state.stats
        with tempfile.TemporaryDirectory() as tmp:
            base = base_module(args.base, Path(tmp))
            for k in (1, 5, 10, 50):
                for query in terms:
                    assert base.rank(segments, stats, query, k) == impacts.rank(segments, stats, query, k), (
                        query
                    )  # type: ignore[attr-defined]
            print(f"identical rankings and scores: {len(terms)} queries x k 1, 5, 10, 50")
            for round_ in range(2):
                spent: dict[str, list[float]] = {"base": [], "now": []}
                pair = (("base", base.rank), ("now", impacts.rank))  # type: ignore[attr-defined]
                for i, query in enumerate(terms[:300]):
                    # the second of a pair runs on the caches the first warmed: measured 0.90x for the same
                    # code, so each goes first on every other query
                    for name, rank in pair if i % 2 == 0 else pair[::-1]:
                        start = time.perf_counter()
                        rank(segments, stats, query, 10)
                        spent[name].append((time.perf_counter() - start) * 1e6)
                base_us, now_us = statistics.mean(spent["base"]), statistics.mean(spent["now"])
                print(
                    f"{Path(args.db).name} round {round_ + 1}: {args.base} {base_us:.1f} us, now {now_us:.1f} us ({now_us / base_us:.2f}x)"
                )


if __name__ == "__main__":
    main()
