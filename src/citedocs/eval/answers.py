"""`citedocs eval answer`: every case through the real answer pipeline, scored per case.

Answerable cases: key-fact recall of what the reader sees (the synthesis and its quotes; then of each part
alone: `key_fact_recall_synthesis`, `key_fact_recall_quotes`; nothing shown scores 0; facts matched through
the analyzer), `answer_chars` (the characters shown), context recall, wrong refusal, invalid-citation rate,
lexical citation support (our checker), and, with a judge, citation precision and faithfulness. Each case's
row in the run directory keeps the exact prompt the model read (`prompt`: the chat messages) and the
`evidence` event. Unanswerable
and off-topic cases: correct refusal (and, for off-topic, whether the gate refused before any model call).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from citedocs.answer.citations import check_citations
from citedocs.answer.events import collect
from citedocs.answer.service import ANSWER_CONSTANTS, AnswerFailed
from citedocs.errors import LLMError
from citedocs.eval.bootstrap import columns, summarize
from citedocs.eval.cases import Case, sample_cases
from citedocs.eval.judge import Judge
from citedocs.eval.metrics import (
    citation_precision,
    context_recall,
    correct_refusal,
    faithfulness,
    invalid_citation_rate,
    key_fact_recall,
    wrong_refusal,
)
from citedocs.eval.runs import run_meta, write_pairs, write_run
from citedocs.hits import Hit
from citedocs.llm.chat import ChatModel
from citedocs.llm.client import LLMClient
from citedocs.llm.model import ModelHandle
from citedocs.service import Citedocs
from citedocs.settings import Settings


def source_label(n: int, path: str, heading: str | None) -> str:
    """How a run records the passage an answer was given (`[2] setup.md § Install`); `rejudge` matches on it."""
    return f"[{n}] {Path(path).name} § {heading}"


def judgeable(case: Case | None, answer: Mapping[str, Any]) -> bool:
    """An answerable case that got an answer (not a refusal): the ones whose sentences are judged."""
    return case is not None and case.answerable and bool(answer.get("answer")) and not answer.get("refused")


async def judge_answer(
    judge: Judge,
    answer: str,
    hits: Sequence[Hit],
    *,
    pairs: list[dict[str, Any]] | None = None,
    case_id: str = "",
) -> tuple[list[list[bool]], int]:
    """Per checked sentence of the delivered answer, one verdict per cited passage; and unparsable verdicts.
    `pairs`, when given, collects every (case, sentence, n, supported) verdict for agreement checks."""
    report = check_citations(answer, hits)
    judgements: list[list[bool]] = []
    unparsed = 0
    for sentence in report.sentences:
        if not sentence.checked:
            continue
        verdicts: list[bool] = []
        for n in sentence.cited:
            if 1 <= n <= len(hits):
                verdict = await judge.supports(sentence.sentence, hits[n - 1].text)
                if verdict is None:
                    unparsed += 1
                verdicts.append(bool(verdict))
                if pairs is not None:
                    pairs.append(
                        {"case": case_id, "sentence": sentence.sentence, "n": n, "supported": bool(verdict)}
                    )
        judgements.append(verdicts)
    return judgements, unparsed


def score_case(
    case: Case, data: dict[str, Any], judgements: list[list[bool]] | None
) -> dict[str, float | None]:
    refused = bool(data.get("refused"))
    sources = data.get("sources") or []
    context = [(s["path"], s.get("heading") or "") for s in sources]
    row: dict[str, float | None] = {
        "wrong_refusal_rate": wrong_refusal(case.kind, refused),
        "correct_refusal": correct_refusal(case.kind, refused),
    }
    # what the reader sees: nothing at all only when the synthesis is refused and no quote is shown
    silent = refused and not data.get("quotes")
    row["wrong_refusal_rate_reader"] = wrong_refusal(case.kind, silent)
    row["correct_refusal_reader"] = correct_refusal(case.kind, silent)
    if case.kind == "off_topic":
        row["gate_refusal"] = 1.0 if data.get("refused_before_model") else 0.0
    if case.answerable:
        synthesis = "" if refused else str(data.get("answer", ""))
        quoted = "\n".join(str(q.get("text", "")) for q in data.get("quotes") or [])
        shown = (synthesis + "\n" + quoted).strip()
        if case.key_facts:  # what the reader sees (the synthesis and the quotes), then each part alone
            row["key_fact_recall"] = key_fact_recall(shown, case.key_facts, not shown)
            row["key_fact_recall_synthesis"] = key_fact_recall(synthesis, case.key_facts, refused)
            row["key_fact_recall_quotes"] = key_fact_recall(quoted, case.key_facts, not quoted)
        row["answer_chars"] = float(len(shown)) if shown else None
        row["context_recall"] = context_recall(context, [(e.file, e.heading) for e in case.evidence], "file")
        if not refused:
            original = data.get("original_citations") or []
            row["invalid_citation_rate"] = (
                invalid_citation_rate(original, range(1, len(sources) + 1)) if original else 0.0
            )
            row["citation_support"] = float(data.get("supported_fraction", 0.0))
            if judgements is not None:
                row["citation_precision"] = citation_precision(judgements)
                row["faithfulness"] = faithfulness(judgements)
    return row


async def _run(
    app: Citedocs,
    cases: Sequence[Case],
    settings: Settings,
    judge_client: ChatModel | None,
    use_judge: bool,
    pairs: list[dict[str, Any]],
    seed: int | None = None,
) -> tuple[dict[str, dict[str, float | None]], dict[str, dict[str, Any]], dict[str, Any]]:
    handle = ModelHandle.from_settings(settings)
    service = app.answer_service(handle.client)
    ready = asyncio.Event()

    def on_ready(client: LLMClient) -> None:
        service.llm = client
        ready.set()

    await handle.start(on_ready)
    if handle.server is not None:
        while not ready.is_set() and handle.state != "failed":
            await asyncio.sleep(0.25)
    problem = handle.unavailable()
    if problem is not None:
        raise LLMError(problem[1], problem[2])
    judge_model = judge_client or service.llm
    judge = Judge(judge_model) if use_judge and judge_model is not None else None
    per_case: dict[str, dict[str, float | None]] = {}
    details: dict[str, dict[str, Any]] = {}
    unparsed = 0
    started = time.perf_counter()
    try:
        for case in cases:
            try:
                prepared = await service.prepare(case.question)
                prepared.seed = seed
                data = await collect(service.generate(prepared))
            except AnswerFailed as exc:
                details[case.id] = {"error": exc.data}
                per_case[case.id] = {"answer_error": 1.0}
                continue
            judgements = None
            if judge is not None and judgeable(case, data):
                judgements, bad = await judge_answer(
                    judge, data["answer"], prepared.hits, pairs=pairs, case_id=case.id
                )
                unparsed += bad
            per_case[case.id] = {**score_case(case, data, judgements), "answer_error": 0.0}
            details[case.id] = {
                "kind": case.kind,
                "question": case.question,
                "answer": data.get("answer"),
                "raw_answer": data.get("raw_answer"),
                "refused": data.get("refused"),
                "refused_before_model": data.get("refused_before_model"),
                "refusal_reason": data.get("refusal_reason"),
                "left_out": data.get("left_out"),
                "citations": data.get("citations"),
                "sources": [
                    source_label(s["n"], s["path"], s.get("heading")) for s in data.get("sources", [])
                ],
                "judgements": judgements,
                "timings": data.get("timings"),
                "usage": data.get("usage"),
                "finish_reason": data.get("finish_reason"),
                "evidence": data.get("evidence"),
                "prompt": prepared.messages,
                "quotes": data.get("quotes"),
            }
    finally:
        await handle.stop()
    meta = {
        "seconds": round(time.perf_counter() - started, 1),
        "judge_unparsed": unparsed,
        "model": service.llm.model if service.llm else None,
    }
    return per_case, details, meta


def run_answer_eval(
    corpus: Path,
    cases: Sequence[Case],
    settings: Settings,
    *,
    run_dir: Path | None = None,
    judge_client: ChatModel | None = None,
    use_judge: bool = True,
    limit: int | None = None,
    every: int | None = None,
    index_db: Path | None = None,
    seed: int | None = None,
) -> dict[str, Any]:
    """`index_db` keeps the corpus index between runs (reindexing is then a no-op); else a throwaway one.
    `seed`: each question's prompt and the model's sampling are drawn from it, so two runs with the same seed,
    code and server send the same prompts (without one, every prompt has a new random fence)."""
    import tempfile

    pairs: list[dict[str, Any]] = []
    chosen = sample_cases(cases, every) if every and every > 1 else list(cases)
    chosen = chosen[:limit] if limit else chosen
    with tempfile.TemporaryDirectory(prefix="citedocs-eval-") as tmp:
        db = index_db if index_db is not None else Path(tmp) / "eval.db"
        app = Citedocs(settings.model_copy(update={"db": str(db)}))
        try:
            source = app.add_folder(corpus)
            app.index(source.name)
            app.wait_for_embeddings()
            per_case, details, extra = asyncio.run(
                _run(app, chosen, settings, judge_client, use_judge, pairs, seed)
            )
        finally:
            app.close()
    recorded = {**settings.model_dump(mode="json"), **ANSWER_CONSTANTS}  # how the answers were made
    meta = run_meta(chosen, recorded, kind="answer", corpus=str(corpus), seed=seed, **extra)
    if run_dir is not None:
        write_run(run_dir, per_case, meta, details)
        if pairs:
            write_pairs(run_dir, pairs)
    return {
        "kind": "answer",
        "cases": len(per_case),
        **extra,
        **summarize(columns(per_case)),
        "run_dir": str(run_dir) if run_dir else None,
    }
