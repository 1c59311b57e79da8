"""Print the (sentence, cited passage) pairs of answer runs that are not graded yet, for grading by hand.

    .venv/bin/python eval/tools/judge_pairs.py --index-db /tmp/idx.db --grades eval/judge-grades.jsonl \
        $CASES runs/answer-full-1 > /tmp/to-grade.txt

Each pair shows the evidence window the judge sees (`citedocs.eval.judge.relevant_window`) and nothing of the
judge's verdict, so the grade is blind. Passages are recovered by re-running retrieval on the run's index, as
`citedocs eval rejudge` does; a case whose recovered sources differ from the run's is skipped.
A grade is one JSON line: {"case", "sentence", "n", "supported", "note"} (a note for every "no").
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from citedocs.answer.citations import check_citations
from citedocs.eval.answers import judgeable
from citedocs.eval.cases import load_cases
from citedocs.eval.judge import relevant_window
from citedocs.eval.rejudge import recovered_hits, run_passage_choice
from citedocs.eval.runs import read_jsonl, read_run
from citedocs.service import Citedocs
from citedocs.settings import Settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--index-db", required=True)
    parser.add_argument("--cases", action="append", type=Path, required=True)
    parser.add_argument("--grades", type=Path)
    parser.add_argument("--jsonl", action="store_true", help="One JSON object per pair instead of text.")
    args = parser.parse_args()
    graded = set()
    if args.grades and args.grades.exists():
        graded = {(g["case"], g["sentence"], g["n"]) for g in read_jsonl(args.grades)}
    cases = {c.id: c for c in load_cases(*args.cases)}
    app = Citedocs(Settings(db=args.index_db))
    seen: set[tuple[str, str, int]] = set()
    try:
        for run_dir in args.runs:
            run = read_run(run_dir)
            top_k, overlap = run_passage_choice(run.meta)
            for case_id, detail in run.details.items():
                case = cases.get(case_id)
                if case is None or not judgeable(case, detail):
                    continue
                hits = recovered_hits(app, case, detail, top_k, overlap)
                if hits is None:
                    continue
                for sentence in check_citations(detail["answer"], hits).sentences:
                    if not sentence.checked:
                        continue
                    for n in sentence.cited:
                        key = (case_id, sentence.sentence, n)
                        if not 1 <= n <= len(hits) or key in graded or key in seen:
                            continue
                        seen.add(key)
                        window = relevant_window(hits[n - 1].text, sentence.sentence)
                        pair = {"case": case_id, "sentence": sentence.sentence, "n": n, "window": window}
                        if args.jsonl:
                            print(json.dumps(pair, ensure_ascii=False))
                        else:
                            print(
                                f"=== {len(seen)} case {case_id} {detail['sources'][n - 1]}\n"
                                f"SENTENCE: {sentence.sentence}\nPASSAGE:\n{window}\n"
                            )
    finally:
        app.close()


if __name__ == "__main__":
    main()
