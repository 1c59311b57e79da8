"""What the synthesis keeps when the model checks its own sentences (issue 44), offline from committed runs.

    PYTHONPATH=src .venv/bin/python bench/studies/model_check.py eval/baseline/answer-quotes-7 ...

Each run's judged pairs are the verdicts of the same model, asked the judge's question ("does this passage
support this sentence?") about each checked sentence and each passage it cites: what a check in the product
with that prompt would say. A sentence no verdict supports is dropped from the synthesis; when no checked
sentence is left, the synthesis is withheld and the quotes are the answer (chosen as after a refusal, with no
confirmations: a lower bound). Then, as bench_quotes measures a run: key-fact recall of what the reader sees
and of each part, length, refusals; and the synthesis's faithfulness from the hand grades (eval/judge-grades*),
before and after, per case as `eval/metrics.faithfulness` averages it.
"""

from __future__ import annotations

import argparse
import glob
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_quotes import (
    EN,
    EN_CASES,
    JA,
    REPO,
    corpus_chunks,
    score_case,
    table,
    whole_passages,
    withheld_by_check,
)

from citedocs.answer.citations import SentenceCheck, check_citations
from citedocs.answer.model_check import SPARE_SUPPORT, without_sentences
from citedocs.answer.quotes import choose_quotes
from citedocs.eval.cases import load_cases
from citedocs.eval.prompts import prompt_passages
from citedocs.eval.runs import read_jsonl


def hand_grades() -> dict[tuple[str, str, int], bool]:
    out = {}
    for name in glob.glob(str(REPO / "eval/judge-grades*.jsonl")):
        for row in read_jsonl(Path(name)):
            out[(row["case"], row["sentence"], row["n"])] = bool(row["supported"])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("run_dirs", nargs="+", type=Path)
    parser.add_argument(
        "--spare", type=float, default=SPARE_SUPPORT, help="keep a sentence the checker finds this much of"
    )
    parser.add_argument("--ja", action="store_true", help="runs of the Japanese dev set")
    args = parser.parse_args()
    language = "ja" if args.ja else "en"
    cases = {c.id: c for c in load_cases(*((JA / "cases.jsonl",) if args.ja else EN_CASES))}
    grades = hand_grades()
    with tempfile.TemporaryDirectory() as tmp:
        chunks = corpus_chunks((JA if args.ja else EN) / "docs", Path(tmp) / "corpus.sqlite3")
    for run_dir in args.run_dirs:
        by_case: dict[str, list[dict[str, Any]]] = {}
        for pair in read_jsonl(run_dir / "judged-pairs.jsonl"):
            by_case.setdefault(pair["case"], []).append(pair)
        rows, faith_before, faith_after, withheld, dropped, checked_n = [], [], [], 0, 0, 0
        for line in (run_dir / "cases.jsonl").read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            case, detail = cases.get(record["id"]), record.get("detail", {})
            if case is None:
                continue
            refused = bool(detail.get("refused"))
            hits, _ = whole_passages(prompt_passages(detail.get("prompt") or []), chunks)
            synthesis = "" if refused else str(detail.get("answer", ""))
            saved = detail.get("quotes") or [] if refused else []
            confirmed = {str(q["text"]) for q in saved if q.get("confirmed")}
            judgements = detail.get("judgements")
            spans: list[SentenceCheck] = []
            if not refused and judgements is not None:
                pairs = iter(by_case.get(case.id, []))
                report = check_citations(synthesis, hits)
                checked = [s for s in report.sentences if s.checked]
                assert len(checked) == len(judgements), case.id
                spans, before, after = [], [], []
                for sentence, row in zip(checked, judgements, strict=True):
                    took = [next(pairs) for _ in row]
                    hand = [grades.get((case.id, p["sentence"], p["n"])) for p in took]
                    ok = any(hand) if None not in hand else None
                    before.append(ok)
                    spared = sentence.supported and sentence.support >= args.spare
                    if spared or any(p["supported"] for p in took):
                        after.append(ok)
                    else:
                        spans.append(sentence)
                checked_n += len(checked)
                dropped += len(spans)
                if before and None not in before:
                    faith_before.append(sum(map(bool, before)) / len(before))
                    if after:
                        faith_after.append(sum(map(bool, after)) / len(after))
                if checked and len(spans) == len(checked):
                    synthesis, withheld = "", withheld + 1  # quotes chosen as for an answer
                else:
                    synthesis = without_sentences(synthesis, spans)
            model_refused = refused and not withheld_by_check(detail, hits)
            quotes = choose_quotes(
                case.question, hits, synthesis, model_refused=model_refused, confirmed=confirmed
            )
            row = score_case(case, synthesis, refused or not synthesis, quotes, language, hits=hits)
            rows.append(row)
        out = table(run_dir.name + " (model check)", rows, (0, 0, 0))
        keep = {
            k: v
            for k, v in out.items()
            if k.startswith(("recall_whole", "recall_synth", "recall_quotes", "chars", "wrong", "correct"))
        }
        print(
            json.dumps(
                {
                    "run": run_dir.name,
                    "spare": args.spare,
                    **keep,
                    "faithfulness_hand_before": round(statistics.fmean(faith_before), 3)
                    if faith_before
                    else None,
                    "faithfulness_hand_after": round(statistics.fmean(faith_after), 3)
                    if faith_after
                    else None,
                    "graded_cases": len(faith_before),
                    "withheld": withheld,
                    "checked_sentences": checked_n,
                    "dropped": dropped,
                }
            )
        )


if __name__ == "__main__":
    main()
