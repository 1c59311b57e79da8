"""Judge a finished answer run again (another judge, or a changed judge prompt) or for the first time (a run
made with --no-judge) without regenerating answers, and measure any judge against hand-graded pairs.

Passages are recovered by re-running retrieval on the run's index; a case whose recovered sources differ from
the ones recorded in the run is skipped and counted, never judged against the wrong text.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

from citedocs.answer.passages import passages
from citedocs.errors import InputError, NotFoundError
from citedocs.eval.answers import judge_answer, judgeable, source_label
from citedocs.eval.cases import Case
from citedocs.eval.judge import Judge
from citedocs.eval.metrics import citation_precision, faithfulness
from citedocs.eval.runs import read_jsonl, read_run, write_pairs, write_run
from citedocs.hits import Hit
from citedocs.llm.chat import ChatModel
from citedocs.search.engine import MAX_K
from citedocs.service import Citedocs


def recovered_hits(
    app: Citedocs, case: Case, detail: dict[str, Any], top_k: int, overlap: float = 0.0
) -> list[Hit] | None:
    """The passages the run's answer was given, found again by the same search on the run's index and the
    same choice of passages (`overlap`: the run's PASSAGE_OVERLAP; runs made before it had none);
    None when they differ from the ones the run recorded (never judge against other text)."""
    found = app.search(case.question, k=min(MAX_K, 2 * top_k), wait_for_model=True).hits
    hits = passages(found, top_k, overlap=overlap)
    labels = [source_label(i, h.path, h.heading) for i, h in enumerate(hits, start=1)]
    return hits if labels == detail.get("sources") else None


def run_passage_choice(meta: dict[str, Any]) -> tuple[int, float]:
    """How a run chose its passages: top_k, and the repeat overlap (0 for runs made before it existed)."""
    settings = meta.get("settings", {})
    return int(settings.get("top_k", 5)), float(settings.get("passage_overlap", 0.0))


async def _rejudge(app: Citedocs, run_dir: Path, cases: dict[str, Case], client: ChatModel) -> dict[str, Any]:
    run = read_run(run_dir)
    judge = Judge(client)
    per_case: dict[str, dict[str, float | None]] = {}
    details: dict[str, dict[str, Any]] = {}
    pairs: list[dict[str, Any]] = []
    skipped = 0
    top_k, overlap = run_passage_choice(run.meta)
    for line in (run_dir / "cases.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        case_id, metrics, detail = record["id"], dict(record["metrics"]), record.get("detail", {})
        if judgeable(cases.get(case_id), detail):
            hits = recovered_hits(app, cases[case_id], detail, top_k, overlap)
            if hits is None:
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
    write_pairs(out_dir, result["pairs"])
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
    return {
        "pairs": n,
        "agreement": round(agree, 3),
        "kappa": round(kappa, 3),
        "judge_precision": round(judge_yes, 3),
        "human_precision": round(human_yes, 3),
    }


def hand_score(run_dir: Path, out_dir: Path, graded: list[dict[str, Any]]) -> dict[str, int]:
    """The run's citation precision and faithfulness with hand grades in place of the judge's verdicts.

    Reads the run's judged pairs (written by `eval answer` or `eval rejudge`) in the order the judge saw them;
    a case with any pair left ungraded gets no value (never a guess), so the summary covers graded cases only.
    """
    run = read_run(run_dir)
    grades = {(g["case"], g["sentence"], g["n"]): bool(g["supported"]) for g in graded}
    by_case: dict[str, list[dict[str, Any]]] = {}
    pairs_file = run_dir / "judged-pairs.jsonl"
    if not pairs_file.exists():
        raise NotFoundError(
            f"{run_dir} has no judged-pairs.jsonl: it was not judged, or judged before verdicts were kept.",
            f"Judge it first: citedocs eval rejudge {run_dir} --cases … --index-db … --out DIR.",
        )
    for pair in read_jsonl(pairs_file):
        by_case.setdefault(pair["case"], []).append(pair)
    per_case: dict[str, dict[str, float | None]] = {}
    counts = {"graded_cases": 0, "ungraded_cases": 0}
    for case_id, metrics in run.per_case.items():
        metrics = dict(metrics)
        judgements = run.details.get(case_id, {}).get("judgements")
        if judgements is not None:
            pairs = iter(by_case.get(case_id, []))
            verdicts = [
                [grades.get((case_id, p["sentence"], p["n"])) for p in _take(pairs, len(row))]
                for row in judgements
            ]
            complete = all(v is not None for row in verdicts for v in row)
            hand = [[bool(v) for v in row] for row in verdicts]
            metrics["citation_precision"] = citation_precision(hand) if complete else None
            metrics["faithfulness"] = faithfulness(hand) if complete else None
            counts["graded_cases" if complete else "ungraded_cases"] += 1
        per_case[case_id] = metrics
    meta = {**run.meta, "hand_scored_from": str(run_dir)}
    if out_dir.exists():
        shutil.rmtree(out_dir)
    write_run(out_dir, per_case, meta, run.details)
    return counts


def _take(pairs: Any, count: int) -> list[dict[str, Any]]:
    """The next `count` pairs; a run whose pairs file is shorter than its judgements is damaged."""
    taken = [pair for _, pair in zip(range(count), pairs, strict=False)]
    if len(taken) != count:
        raise InputError(
            "The run's judged-pairs.jsonl does not match its judgements.",
            "Judge the run again (eval rejudge).",
        )
    return taken
