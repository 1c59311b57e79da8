"""The duplicate filter's screen (search/distinct.py): how little two passages' plain words may overlap when their
content terms make one a repeat of the other, and what each way of taking plain words costs.

    PYTHONPATH=src .venv/bin/python bench/studies/distinct_screen.py \\
        --index /tmp/sp/kw/scifact-x1.db ../shared/data/scifact/queries.jsonl \\
        --index /tmp/idx.db ../shared/data/claude-docs-qa/cases.jsonl \\
        --index /tmp/ja.db ../shared/data/ja-developers-reference/cases.jsonl

For the top 10 of every question (keyword search, no filter), every ordered pair (a passage, one ranked above
it): its content-term coverage (`text.terms.coverage`, the filter's rule) and its plain-word coverage by each
screen. A screen is safe at threshold t when every pair with content coverage >= PASSAGE_OVERLAP has screen
coverage >= t (it may only let pairs through to the exact rule, never stop a repeat). Prints, per screen, the
lowest screen coverage of a repeat, the share of pairs a threshold of 0.4 and the filter's own threshold let
through (each costs an analysis), and its time a passage. `index_sketch` is what the filter reads: each
passage's keyword-index sketch (search/sketches.py), taken from the index, so it costs nothing at search time.
CJK passages are always analysed by the filter and are left out here.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from citedocs.search.distinct import PASSAGE_OVERLAP, SKETCH_SCREEN, WORD_SCREEN
from citedocs.service import Citedocs
from citedocs.settings import Settings
from citedocs.text.analyzer import terms as analyse
from citedocs.text.cjk import has_cjk
from citedocs.text.terms import coverage, extract_terms

_WORD = re.compile(r"\w+")
SCREENS: dict[str, Callable[[str], frozenset[int]]] = {
    "word_runs": lambda text: frozenset(map(hash, _WORD.findall(text.lower()))),
    "split": lambda text: frozenset(map(hash, text.lower().split())),
    # the passage's keyword-index terms (what its FTS row holds): read from the store, not analysed, at search time
    "index_terms": lambda text: frozenset(map(hash, analyse(text))),
    "split_stripped": lambda text: frozenset(
        map(hash, (w.strip(".,;:!?()[]{}\"'`*") for w in text.lower().split()))
    ),
}


def questions(path: Path) -> list[str]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        out.append(row.get("question") or row.get("text") or "")
    return [q for q in out if q]


def share(mine: frozenset[int] | int, theirs: frozenset[int] | int) -> float:
    if isinstance(mine, int) and isinstance(theirs, int):
        return (mine & theirs).bit_count() / mine.bit_count() if mine else 1.0
    assert isinstance(mine, frozenset) and isinstance(theirs, frozenset)
    return len(mine & theirs) / len(mine) if mine else 1.0


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--index", nargs=2, action="append", metavar=("DB", "QUESTIONS"), required=True)
    args = parser.parse_args()
    for db, path in args.index:
        app = Citedocs(Settings(db=db, embedder="none", _env_file=None))  # type: ignore[call-arg]
        try:
            app.engine.keyword.wait(300)
            found = [app.search(q, k=10, mode="keyword").hits for q in questions(Path(path))]
            lists = [[h.text for h in hits] for hits in found]
            view = app.engine.keyword.view()
            assert view is not None
            by_text = {h.text: h.chunk_id for hits in found for h in hits}
            rowids = {t: app.store.chunk_by_id(c).rowid for t, c in by_text.items()}  # type: ignore[union-attr]
            sketch = dict(zip(rowids, view.sketches(list(rowids.values())), strict=True))
        finally:
            app.close()
        texts = sorted({t for hits in lists for t in hits if not has_cjk(t)})
        terms = {t: extract_terms(t) for t in texts}
        words: dict[str, dict[str, frozenset[int] | int]] = {}
        cost: dict[str, float] = {}
        for name, screen in SCREENS.items():
            start = time.perf_counter()
            words[name] = {t: screen(t) for t in texts}
            cost[name] = (time.perf_counter() - start) / max(1, len(texts)) * 1e6
        # what the filter reads: the keyword index's sketch of each passage (heading and body terms)
        words["index_sketch"] = {t: sketch[t] or 0 for t in texts}
        cost["index_sketch"] = 0.0
        pairs = repeats = 0
        names = [*SCREENS, "index_sketch"]
        lowest = dict.fromkeys(names, 1.0)
        passed = dict.fromkeys(names, 0)
        passed_own = dict.fromkeys(names, 0)
        own = {name: SKETCH_SCREEN if name == "index_sketch" else WORD_SCREEN for name in names}
        for hits in lists:
            hits = [t for t in hits if not has_cjk(t)]
            for j, mine in enumerate(hits):
                for theirs in hits[:j]:
                    pairs += 1
                    repeat = coverage(terms[mine], terms[theirs]) >= PASSAGE_OVERLAP
                    repeats += repeat
                    for name in names:
                        value = share(words[name][mine], words[name][theirs])
                        passed[name] += value >= 0.4
                        passed_own[name] += value >= own[name]
                        if repeat:
                            lowest[name] = min(lowest[name], value)
        print(
            json.dumps(
                {
                    "index": Path(db).name,
                    "lists": len(lists),
                    "pairs": pairs,
                    "repeats": repeats,
                    "passages": len(texts),
                    "passage_chars_p50": statistics.median(map(len, texts)) if texts else 0,
                    **{
                        name: {
                            "lowest_repeat_coverage": round(lowest[name], 3),
                            "pairs_through_at_0.4": round(passed[name] / max(1, pairs), 3),
                            f"pairs_through_at_{own[name]}": round(passed_own[name] / max(1, pairs), 4),
                            "us_a_passage": round(cost[name], 1),
                        }
                        for name in names
                    },
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
