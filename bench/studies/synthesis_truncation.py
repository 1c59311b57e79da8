"""Would a shorter synthesis be more faithful? Hand-graded faithfulness of the first N sentences of each answer.

    PYTHONPATH=src .venv/bin/python bench/studies/synthesis_truncation.py [eval/baseline/answer-quotes-4 ...]

For each committed run (default: answer-quotes-2, -3, -4), every answer whose sentence-passage pairs are all
hand-graded (eval/judge-grades*.jsonl): faithfulness (the share of sentences supported by a passage they cite;
an uncited sentence is unsupported) over its first N sentences, N = 1..4 and all, as the mean over answers and
over sentences; then how the unsupported sentences split between uncited ones and cited-but-unsupported ones.
No model runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
RUNS = ["answer-quotes-2", "answer-quotes-3", "answer-quotes-4"]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def verdicts(run: Path, grades: dict[tuple[str, str, int], bool]) -> list[list[list[bool]]]:
    """Per fully graded answer, per sentence, the hand verdict for each passage it cites."""
    by_case: dict[str, list[dict[str, Any]]] = {}
    for pair in _jsonl(run / "judged-pairs.jsonl"):
        by_case.setdefault(pair["case"], []).append(pair)
    out = []
    for row in _jsonl(run / "cases.jsonl"):
        judgements = row["detail"].get("judgements")
        if not judgements:
            continue
        pairs = iter(by_case.get(row["id"], []))
        graded = [
            [grades.get((row["id"], p["sentence"], p["n"])) for p in [next(pairs) for _ in cited]]
            for cited in judgements
        ]
        if all(v is not None for sentence in graded for v in sentence):
            out.append([[bool(v) for v in sentence] for sentence in graded])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("runs", nargs="*", default=[str(REPO / "eval" / "baseline" / r) for r in RUNS])
    args = parser.parse_args()
    grades: dict[tuple[str, str, int], bool] = {}
    for path in sorted((REPO / "eval").glob("judge-grades*.jsonl")):
        for g in _jsonl(path):
            grades[(g["case"], g["sentence"], g["n"])] = bool(g["supported"])
    for run in map(Path, args.runs):
        answers = verdicts(run, grades)
        row: dict[str, Any] = {"run": run.name, "answers": len(answers)}
        for n in (1, 2, 3, 4, None):
            kept = [a[:n] for a in answers if a[:n]]
            sentences = [any(s) for a in kept for s in a]
            row[f"first_{n or 'all'}"] = {
                "per_answer": round(statistics.mean(sum(map(any, a)) / len(a) for a in kept), 3),
                "per_sentence": round(sum(sentences) / len(sentences), 3),
                "sentences": len(sentences),
            }
        every = [s for a in answers for s in a]
        row["unsupported_uncited"] = sum(1 for s in every if not s)
        row["unsupported_cited"] = sum(1 for s in every if s and not any(s))
        print(json.dumps(row))


if __name__ == "__main__":
    main()
