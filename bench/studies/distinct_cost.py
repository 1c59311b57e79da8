"""What the duplicate filter costs a search whose passages were not seen before, by each screen.

    PYTHONPATH=src .venv/bin/python bench/studies/distinct_cost.py /tmp/sp/kw/scifact-x1.db
    PYTHONPATH=src .venv/bin/python bench/studies/distinct_cost.py /tmp/sp/kw/scifact-x10.db

For the SciFact questions' keyword top 10 (the questions after the 50 bench_search_path warms with), the filter
keeps 5 as a distinct search does, with the passages' remembered terms and plain words forgotten before each
list (the token-level caches under them stay warm, for both screens alike): the keyword-index sketch screen
(the chunks' sketches read from the index, included) against plain words from the text. Three rounds, mean
wall time a list.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _env import SHARED_DATA, print_header
from bench_search_path import keyword_app

from citedocs.eval.beir import load_beir
from citedocs.search import distinct
from citedocs.search.keyword import keyword_ranking


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("db")
    args = parser.parse_args()
    print_header("The duplicate filter's cost on passages not seen before: sketch screen vs plain words")
    queries = list(load_beir(SHARED_DATA / "scifact").queries.values())[50:]
    with keyword_app(args.db) as app:
        engine = app.engine
        lists = []
        for query in queries:
            found = engine._chunks(keyword_ranking(app.store, query, 10, index=engine.keyword))
            lists.append(([c.text for c, _ in found], found))

        def mean_ms(sketch: bool) -> float:
            spent = []
            for texts, found in lists:
                distinct._passage_terms.cache_clear()
                distinct._plain_words.cache_clear()
                start = time.perf_counter()
                distinct.distinct_indexes(
                    texts, 5, distinct.PASSAGE_OVERLAP, engine._sketches(found) if sketch else None
                )
                spent.append(time.perf_counter() - start)
            return statistics.mean(spent) * 1000

        for round_ in range(3):
            print(
                f"{Path(args.db).name} round {round_ + 1}: sketch {mean_ms(True):.3f} ms, plain words {mean_ms(False):.3f} ms"
            )


if __name__ == "__main__":
    main()
