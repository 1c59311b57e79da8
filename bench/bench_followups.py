"""Follow-up questions: does a reference passage reach the prompt, and rank first, with the conversation vs alone?

    PYTHONPATH=src .venv/bin/python bench/bench_followups.py                # keyword retrieval, both sets
    PYTHONPATH=src .venv/bin/python bench/bench_followups.py --mode hybrid  # needs the embedding model

English: the MTRAG tasks of ../shared/data/mtrag-dev whose last turn depends on the conversation (`multi_turn`
Follow-up or Clarification, turn 3 or later, with reference passages: 141 tasks), over an index of all 747
passages of both domains plus the claude-docs-qa pages as distractors. Japanese: the conversations of
eval/cases/ja-followups.jsonl over ../shared/data/ja-developers-reference (a hit counts when it is the
evidence section). Each last question goes through the answer service's own `prepare` (retrieval of twice k,
fused with the rewrite for a follow-up, passages, the relevance gate) with no model loaded, so the rewrite is
the deterministic one (`answer/conversation.py`): "alone" is the question without its history, "history" the
same question with it. Reported per set: reference among the prompt's passages (and the gate let it through),
reference ranked first, wrong refusals of these answerable follow-ups by the gate, and the rewrite's latency.

    PYTHONPATH=src .venv/bin/python bench/bench_followups.py --llm-base-url http://127.0.0.1:8080/v1 --model-cases 12

also times the model's rewrite (`answer/conversation.py` `rewrite_messages`, as the answer service sends it) on
the first N cases of each set against a running OpenAI-compatible server (llama-server), and prints each rewrite.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _env import SHARED_DATA, header

from citedocs.answer.conversation import (
    REWRITE_MAX_TOKENS,
    REWRITE_STOP,
    Turn,
    carry_terms,
    parse_rewrite,
    rewrite_messages,
)
from citedocs.answer.prompt import new_fence
from citedocs.answer.retriever import LocalRetriever
from citedocs.answer.service import AnswerService
from citedocs.eval.metrics import section_recall_at_k
from citedocs.llm.client import LLMClient
from citedocs.service import Citedocs
from citedocs.settings import Settings

EVAL = Path(__file__).resolve().parents[1] / "eval" / "cases"
MTRAG = SHARED_DATA / "mtrag-dev"
FOLLOW_UPS = ("Follow-up", "Clarification")


def mtrag_tasks(answerable: bool = True) -> list[dict[str, Any]]:
    """The follow-ups with reference passages, or (`answerable` False) those marked UNANSWERABLE."""
    tasks = [json.loads(line) for line in (MTRAG / "qa_tasks.jsonl").read_text(encoding="utf-8").splitlines()]
    return [
        t
        for t in tasks
        if t["multi_turn"][0] in FOLLOW_UPS
        and int(t["turn"]) >= 3
        and (bool(t["reference_passages"]) if answerable else t["answerability"][0] == "UNANSWERABLE")
    ]


def mtrag_case(task: dict[str, Any]) -> dict[str, Any]:
    turns = [Turn("user" if t["speaker"] == "user" else "assistant", t["text"]) for t in task["input"]]
    return {
        "id": task["task_id"],
        "history": turns[:-1],
        "question": turns[-1].content,
        "files": set(task["reference_passages"]),
        "kind": task["answerability"][0],
    }


def ja_case(raw: dict[str, Any]) -> dict[str, Any]:
    turns = [Turn(t["role"], t["content"]) for t in raw["turns"]]
    return {
        "id": raw["id"],
        "history": turns,
        "question": raw["question"],
        "sections": [(e["file"], e["heading"]) for e in raw["evidence"]],
        "kind": "ANSWERABLE",
    }


def build_mtrag_corpus(root: Path) -> Path:
    folder = root / "mtrag"
    folder.mkdir()
    for line in (MTRAG / "passages.jsonl").read_text(encoding="utf-8").splitlines():
        passage = json.loads(line)
        text = f"# {passage['title']}\n\n{passage['text']}\n"
        (folder / f"{passage['document_id']}.md").write_text(text, encoding="utf-8")
    return folder


def is_reference(case: dict[str, Any], path: str, heading: str) -> bool:
    if "files" in case:
        return Path(path).stem in case["files"]
    return section_recall_at_k([(path, heading)], case["sections"], None) > 0


async def measure(service: AnswerService, case: dict[str, Any], history: bool) -> dict[str, Any]:
    prepared = await service.prepare(case["question"], history=case["history"] if history else None)
    refs = [is_reference(case, h.path, h.heading) for h in prepared.hits]
    return {
        "in_passages": any(refs),
        "in_prompt": any(refs) and prepared.gate.allowed,
        "first": bool(refs[:1] and refs[0]),
        "refused": not prepared.gate.allowed,
    }


def rewrite_ms(cases: list[dict[str, Any]], rounds: int = 5) -> list[float]:
    out = []
    for case in cases:
        best = min(_timed(lambda c=case: carry_terms(c["history"], c["question"])) for _ in range(rounds))
        out.append(best)
    return out


def _timed(fn: Any) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000.0


async def model_rewrites(base_url: str, cases: list[dict[str, Any]]) -> list[float]:
    """Seconds per model rewrite, sequentially (the first one warms the server and is not counted)."""
    client = LLMClient(base_url, "local", read_timeout_s=60.0)
    out = []
    try:
        for n, case in enumerate(cases):
            messages = rewrite_messages(case["history"], case["question"], new_fence())
            started = time.perf_counter()
            done = await client.complete(
                messages, max_tokens=REWRITE_MAX_TOKENS, temperature=0.0, stop=REWRITE_STOP
            )
            elapsed = time.perf_counter() - started
            if n:
                out.append(elapsed)
            print(
                f"  {elapsed:5.2f} s  {case['question'][:60]!r} -> {parse_rewrite(done.text, case['question'])!r}"
            )
    finally:
        await client.aclose()
    return out


def report_model(name: str, base_url: str, cases: list[dict[str, Any]]) -> None:
    print(f"\n## {name}: the model's rewrite, {len(cases)} cases, {base_url}")
    seconds = sorted(asyncio.run(model_rewrites(base_url, cases)))
    if seconds:
        print(
            f"model rewrite: P50 {statistics.median(seconds):.2f} s, max {seconds[-1]:.2f} s "
            f"({len(seconds)} timed after one warm-up)"
        )


def report_unanswerable(
    app: Citedocs, cases: list[dict[str, Any]], name: str = "UNANSWERABLE follow-ups"
) -> None:
    """How many in-domain follow-ups the documents cannot answer the gate lets through to the model (which is
    then asked to refuse): not a goal, the price of judging a follow-up with its context."""
    service = AnswerService(LocalRetriever(app, wait_for_model=True), None, app.settings)

    async def passed(history: bool) -> int:
        return sum(
            [
                (await service.prepare(c["question"], history=c["history"] if history else None)).gate.allowed
                for c in cases
            ]
        )

    alone, with_history = asyncio.run(passed(False)), asyncio.run(passed(True))
    print(
        f"{name} ({len(cases)}) the gate lets through to the model: alone {alone}, "
        f"with history {with_history}"
    )


def report(name: str, app: Citedocs, cases: list[dict[str, Any]], mode: str, model_url: str = "") -> None:
    """`model_url`: also a row with the model's rewrite (the service as a server runs it, its model loaded)."""
    settings = app.settings
    service = AnswerService(LocalRetriever(app, wait_for_model=True), None, settings)

    async def run_all() -> dict[str, list[dict[str, Any]]]:
        out = {
            label: [await measure(service, c, flag) for c in cases]
            for label, flag in (("alone", False), ("history", True))
        }
        if model_url:
            llm = LLMClient(model_url, "local", read_timeout_s=60.0)
            with_model = AnswerService(LocalRetriever(app, wait_for_model=True), llm, settings)
            out["history, model rewrite"] = [await measure(with_model, c, True) for c in cases]
            await llm.aclose()
        return out

    started = time.perf_counter()
    results = asyncio.run(run_all())
    elapsed = time.perf_counter() - started
    print(f"\n## {name}: {len(cases)} follow-ups, retrieval {mode}, k={settings.top_k} ({elapsed:.0f} s)")
    print("| query | reference in prompt | in passages | ranked first | wrong refusals (gate) |")
    print("|---|---|---|---|---|")
    for label, rows in results.items():
        n = len(rows)

        def share(key: str, rows: list[dict[str, Any]] = rows, n: int = n) -> str:
            return f"{sum(r[key] for r in rows) / n:.3f} ({sum(r[key] for r in rows)}/{n})"

        print(
            f"| {label} | {share('in_prompt')} | {share('in_passages')} | {share('first')} | {share('refused')} |"
        )
    latencies = sorted(rewrite_ms(cases))
    p95 = latencies[min(len(latencies) - 1, int(0.95 * len(latencies)))]
    print(
        f"deterministic rewrite: P50 {statistics.median(latencies):.3f} ms, P95 {p95:.3f} ms (best of 5 per case)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", default="keyword", choices=("keyword", "semantic", "hybrid"))
    parser.add_argument("--only", choices=("mtrag", "ja"), default=None)
    parser.add_argument("--limit", type=int, default=0, help="only the first N cases of each set")
    parser.add_argument("--llm-base-url", default="", help="time the model's rewrite against this server")
    parser.add_argument("--model-cases", type=int, default=12, help="cases per set for the model's rewrite")
    parser.add_argument(
        "--model-retrieval",
        action="store_true",
        help="with --llm-base-url: also retrieve with the model's rewrite",
    )
    args = parser.parse_args()
    for key, value in header().items():
        print(f"{key}: {value}")
    print("machine shared with other jobs: timings are noisy")
    embedder = "none" if args.mode == "keyword" else "auto"
    with tempfile.TemporaryDirectory(prefix="citedocs-followups-") as tmp:
        root = Path(tmp)
        if args.only in (None, "mtrag"):
            cases = [mtrag_case(t) for t in mtrag_tasks()]
            cases = cases[: args.limit] if args.limit else cases
            app = Citedocs(Settings(db=str(root / "mtrag.sqlite3"), embedder=embedder, search_mode=args.mode))
            app.add_folder(build_mtrag_corpus(root))
            app.add_folder(SHARED_DATA / "claude-docs-qa" / "docs")
            app.index()
            app.wait_for_embeddings()
            model_url = args.llm_base_url if args.model_retrieval else ""
            report("MTRAG (mtrag-dev), English", app, cases, args.mode, model_url)
            report_unanswerable(app, [mtrag_case(t) for t in mtrag_tasks(answerable=False)])
            off_topic = (EVAL / "off-topic-40.txt").read_text(encoding="utf-8").splitlines()
            asked = [{**case, "question": q} for case, q in zip(cases, off_topic, strict=False)]
            report_unanswerable(
                app, asked, "off-topic-40 questions asked as follow-ups of MTRAG conversations"
            )
            app.close()
            if args.llm_base_url:
                report_model("MTRAG", args.llm_base_url, cases[: args.model_cases])
        if args.only in (None, "ja"):
            raw = (EVAL / "ja-followups.jsonl").read_text(encoding="utf-8").splitlines()
            cases = [ja_case(json.loads(line)) for line in raw if line.strip()]
            cases = cases[: args.limit] if args.limit else cases
            app = Citedocs(Settings(db=str(root / "ja.sqlite3"), embedder=embedder, search_mode=args.mode))
            app.add_folder(SHARED_DATA / "ja-developers-reference" / "docs")
            app.index()
            app.wait_for_embeddings()
            report(
                "Japanese (eval/cases/ja-followups.jsonl)",
                app,
                cases,
                args.mode,
                args.llm_base_url if args.model_retrieval else "",
            )
            app.close()
            if args.llm_base_url:
                report_model("Japanese", args.llm_base_url, cases[: args.model_cases])


if __name__ == "__main__":
    main()
