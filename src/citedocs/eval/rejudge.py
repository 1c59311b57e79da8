"""Judge a finished answer run again (another judge, or a changed judge prompt) without regenerating answers,
and measure any judge against hand-graded (sentence, passage) pairs.

Passages are recovered by re-running retrieval on the run's index; a case whose recovered sources differ from
the ones recorded in the run is skipped and counted, never judged against the wrong text.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

from citedocs.answer.llm import ChatModel
from citedocs.eval.answers import judge_answer
from citedocs.eval.cases import Case
from citedocs.eval.judge import Judge
from citedocs.eval.metrics import citation_precision, faithfulness
from citedocs.eval.runs import read_run, write_run
from citedocs.service import Citedocs


def _labels(hits: list[Any]) -> list[str]:
    return [f"[{i}] {Path(h.path).name} § {h.heading}" for i, h in enumerate(hits, start=1)]


async def _rejudge(app: Citedocs, run_dir: Path, cases: dict[str, Case], client: ChatModel) -> dict[str, Any]:
    run = read_run(run_dir)
    judge = Judge(client)
    per_case: dict[str, dict[str, float | None]] = {}
    details: dict[str, dict[str, Any]] = {}
    pairs: list[dict[str, Any]] = []
    skipped = 0
    top_k = int(run.meta.get("settings", {}).get("top_k", 5))
    for line in (run_dir / "cases.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        case_id, metrics, detail = record["id"], dict(record["metrics"]), record.get("detail", {})
        if detail.get("judgements") is not None and case_id in cases:
            hits = app.search(cases[case_id].question, k=top_k, wait_for_model=True).hits
            if _labels(hits) != detail.get("sources"):
                skipped += 1
            else:
                judgements, _ = await judge_answer(
                    judge, detail["answer"], hits, pairs=pairs, case_id=case_id
                )
                detail = {**detail, "judgements": judgements}
                metrics["citation_precision"] = citation_precision(judgements)
                metrics["faithfulness"] = faithfulness(judgements)
        per_case[case_id] = metrics
        details[case_id] = detail
    return {"per_case": per_case, "details": details, "pairs": pairs, "skipped": skipped, "meta": run.meta}


def rejudge_run(
    app: Citedocs, run_dir: Path, out_dir: Path, cases: list[Case], client: ChatModel
) -> dict[str, Any]:
    result = asyncio.run(_rejudge(app, run_dir, {c.id: c for c in cases}, client))
    meta = {**result["meta"], "rejudged_from": str(run_dir), "rejudge_skipped": result["skipped"]}
    if out_dir.exists():
        shutil.rmtree(out_dir)
    write_run(out_dir, result["per_case"], meta, result["details"])
    (out_dir / "judged-pairs.jsonl").write_text(
        "".join(json.dumps(p, ensure_ascii=False) + "\n" for p in result["pairs"]), encoding="utf-8"
    )
    return {"pairs": len(result["pairs"]), "skipped": result["skipped"]}


def judge_agreement(judged: list[dict[str, Any]], graded: list[dict[str, Any]]) -> dict[str, float]:
    """Agreement and Cohen's kappa of a judge's verdicts with hand grades, matched on (case, sentence, n)."""
    verdicts = {(p["case"], p["sentence"], p["n"]): p["supported"] for p in judged}
    both = [
        (verdicts[key], g["supported"])
        for g in graded
        if (key := (g["case"], g["sentence"], g["n"])) in verdicts
    ]
    n = len(both)
    if not n:
        return {"pairs": 0}
    agree = sum(1 for a, b in both if a == b) / n
    judge_yes = sum(1 for a, _ in both if a) / n
    human_yes = sum(1 for _, b in both if b) / n
    chance = judge_yes * human_yes + (1 - judge_yes) * (1 - human_yes)
    kappa = (agree - chance) / (1 - chance) if chance < 1 else 1.0
    return {"pairs": n, "agreement": round(agree, 3), "kappa": round(kappa, 3),
            "judge_precision": round(judge_yes, 3), "human_precision": round(human_yes, 3)}  # fmt: skip
