"""Print the (sentence, cited passage) pairs of answer runs that are not graded yet, for grading by hand.

    .venv/bin/python bench/judge_pairs.py --index-db /tmp/idx.db --grades eval/judge-grades.jsonl \
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
from citedocs.eval.cases import load_cases
from citedocs.eval.judge import relevant_window
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
        for line in args.grades.read_text(encoding="utf-8").splitlines():
            if line.strip():
                g = json.loads(line)
                graded.add((g["case"], g["sentence"], g["n"]))
    cases = {c.id: c for c in load_cases(*args.cases)}
    app = Citedocs(Settings(db=args.index_db))
    seen: set[tuple[str, str, int]] = set()
    try:
        for run in args.runs:
            top_k = int(json.loads((run / "summary.json").read_text())["meta"]["settings"].get("top_k", 5))
            for line in (run / "cases.jsonl").read_text(encoding="utf-8").splitlines():
                record = json.loads(line)
                detail = record.get("detail", {})
                if record["id"] not in cases or detail.get("refused") or not detail.get("answer"):
                    continue
                if cases[record["id"]].kind != "answerable":
                    continue
                hits = app.search(cases[record["id"]].question, k=top_k, wait_for_model=True).hits
                labels = [f"[{i}] {Path(h.path).name} § {h.heading}" for i, h in enumerate(hits, start=1)]
                if labels != detail.get("sources"):
                    continue
                for sentence in check_citations(detail["answer"], hits).sentences:
                    if not sentence.checked:
                        continue
                    for n in sentence.cited:
                        key = (record["id"], sentence.sentence, n)
                        if not 1 <= n <= len(hits) or key in graded or key in seen:
                            continue
                        seen.add(key)
                        window = relevant_window(hits[n - 1].text, sentence.sentence)
                        pair = {"case": key[0], "sentence": key[1], "n": n, "window": window}
                        if args.jsonl:
                            print(json.dumps(pair, ensure_ascii=False))
                        else:
                            print(f"=== {len(seen)} case {key[0]} [{n}] {labels[n - 1]}\nSENTENCE: {key[1]}\n"
                                  f"PASSAGE:\n{window}\n")  # fmt: skip
    finally:
        app.close()


if __name__ == "__main__":
    main()
