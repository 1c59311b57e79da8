"""The relevance gate on labelled questions: who reaches the model, with and without `MIN_HELD_TERMS`.

    PYTHONPATH=src .venv/bin/python bench/studies/bench_gate.py --index-db /tmp/idx.db
    PYTHONPATH=src .venv/bin/python bench/studies/bench_gate.py --index-db /tmp/idx-ja.db --corpus ja --mode keyword

Each question is retrieved as the answer service does (twice k, repeats dropped, top 5) and put to
`relevance_decision` with the share test alone (`min_held` 0, the old gate) and with the held-terms test at
several counts; the last column is the gate as served without its test of the question's names
(`unheld_names`). Sets: the corpus's own cases by kind (answerable should pass; off-topic should not; the
unanswerable ones are in-domain, so passing them is the model's job to refuse), the 40 hand-written off-topic
questions of `eval/cases/off-topic-40.txt`, and, for claude-docs, every SciFact claim (1,109 long biomedical
sentences: off-topic text with many content words, the hard case for a count of held terms).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from _env import SHARED_DATA, header

from citedocs.answer.gate import HALF_HELD_TERMS, MIN_HELD_TERMS, relevance_decision
from citedocs.answer.passages import passages
from citedocs.eval.cases import load_cases
from citedocs.search.distinct import PASSAGE_OVERLAP
from citedocs.service import Citedocs
from citedocs.settings import Settings

EVAL = Path(__file__).resolve().parents[2] / "eval" / "cases"
CORPORA = {"claude": SHARED_DATA / "claude-docs-qa", "ja": SHARED_DATA / "ja-developers-reference"}
COUNTS = (0, 4, 5, 6)
HALF = -1  # the column of the gate as it stands: MIN_HELD_TERMS, half of at least HALF_HELD_TERMS, the names
NAMES_OFF = -2  # the same without the test of the question's names (`unheld_names`)


def questions(corpus: str) -> list[tuple[str, str]]:
    """(set, question) pairs."""
    root = CORPORA[corpus]
    if corpus == "claude":
        cases = load_cases(
            root / "cases.jsonl", EVAL / "claude-docs-key-facts.jsonl", EVAL / "claude-docs-extra.jsonl"
        )
    else:
        cases = load_cases(root / "cases.jsonl")
    out = [(case.kind, case.question) for case in cases]
    out += [("hand-written off-topic", line) for line in (EVAL / "off-topic-40.txt").read_text().splitlines()]
    if corpus == "claude":
        claims = (SHARED_DATA / "scifact" / "queries.jsonl").read_text(encoding="utf-8").splitlines()
        out += [("SciFact claims", json.loads(line)["text"]) for line in claims]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index-db", type=Path, required=True)
    parser.add_argument("--corpus", choices=sorted(CORPORA), default="claude")
    parser.add_argument("--mode", default="hybrid")
    args = parser.parse_args()
    for key, value in header().items():
        print(f"{key}: {value}")
    settings = Settings(db=str(args.index_db))
    app = Citedocs(settings)
    source = app.add_folder((CORPORA[args.corpus] / "docs").resolve())
    app.index(source.name)
    if args.mode != "keyword":
        app.wait_for_embeddings()
        assert app.embedder is not None, "no embedder for this index"
        app.embedder.wait()  # loaded lazily: until then hybrid search answers with keyword results
    passed: dict[str, dict[int, int]] = defaultdict(lambda: dict.fromkeys((*COUNTS, HALF, NAMES_OFF), 0))
    total: dict[str, int] = defaultdict(int)
    for kind, question in questions(args.corpus):
        result = app.search(question, k=2 * settings.top_k, mode=args.mode)
        assert result.mode == args.mode, result.note
        hits = passages(result.hits, settings.top_k, overlap=PASSAGE_OVERLAP)
        total[kind] += 1
        for count in COUNTS:
            passed[kind][count] += relevance_decision(
                question, hits, settings.relevance_threshold, min_held=count, half_held=0
            ).allowed
        passed[kind][HALF] += relevance_decision(question, hits, settings.relevance_threshold).allowed
        passed[kind][NAMES_OFF] += relevance_decision(
            question, hits, settings.relevance_threshold, names=False
        ).allowed
    print(
        f"\n{args.corpus}, {args.mode} top-{settings.top_k}, share threshold {settings.relevance_threshold}: "
        "questions that reach the model"
    )
    print(
        "| set | questions | share only (old) | "
        + " | ".join(f"or ≥ {c} terms held" for c in COUNTS[1:])
        + f" | ≥ {MIN_HELD_TERMS}, or half of ≥ {HALF_HELD_TERMS} (as served) | the same, names not checked |"
    )
    print("|---|---|---|" + "---|" * (len(COUNTS) + 1))
    for kind in total:
        cells = " | ".join(str(passed[kind][c]) for c in (*COUNTS, HALF, NAMES_OFF))
        print(f"| {kind} | {total[kind]} | {cells} |")


if __name__ == "__main__":
    main()
