"""The `evidence` event, measured without the model: the key facts it and the prompt hold, and how fast it comes.

    # key facts in what the model reads (the whole passages) and in the best sentences (no model needed);
    # --overlap 0.8: passages repeating a better one dropped first (PASSAGE_OVERLAP; 0 keeps them)
    PYTHONPATH=src .venv/bin/python bench/studies/bench_evidence.py facts --index-db /tmp/idx.db $CASES [--overlap 0.8]
    # latency of the `evidence` event (and of the first token) over the cases, scripted model (tests/fakes)
    PYTHONPATH=src .venv/bin/python bench/studies/bench_evidence.py latency --index-db /tmp/idx.db $CASES

`facts`: for every answerable case with key facts, the share of its key facts (same matching as the
`key_fact_recall` metric) found in the text the model reads (the whole passages): the ceiling of key-fact recall
for an answer that quotes its prompt. It also counts the key facts in the best 3, 4 and 6 single sentences (3 is
what the `evidence` event shows, no model), beside the model's answers of the runs given with `--answers`, and
checks that every sentence the event shows lies inside the line span it names in the file.
`latency`: the real answer service over the same index with an LLMClient to the fake OpenAI server (a real
HTTP server answering a scripted text): time from the request to the `evidence` event, and to the first token.

The evidence windows measured here before (`--whole`, `--embeddings`, budgets 250-550 tokens) lost to whole
passages and were removed; their figures are in docs/decisions/answers.md, their code in git history (1a6220d).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from _env import header

from citedocs.answer.evidence import best_sentences
from citedocs.answer.passages import passages
from citedocs.answer.prepared import HIGHLIGHTS
from citedocs.answer.prompt import build_messages
from citedocs.eval.cases import load_cases
from citedocs.eval.metrics import key_fact_recall
from citedocs.eval.runs import read_jsonl
from citedocs.hits import Hit
from citedocs.service import Citedocs
from citedocs.settings import Settings
from citedocs.text.tokens import estimate_tokens

EVENT_SENTENCES = (HIGHLIGHTS, 4, 6)
CORPUS = Path(__file__).resolve().parents[3] / "shared" / "data" / "claude-docs-qa" / "docs"


def _app(index_db: Path) -> Citedocs:
    app = Citedocs(Settings(db=str(index_db)))
    source = app.add_folder(CORPUS)
    app.index(source.name)
    app.wait_for_embeddings()
    return app


def _line_check(hit: Hit, line_start: int, line_end: int, text: str) -> tuple[bool, bool]:
    """(the sentence's first and last lines are inside its span, its first line is exactly at line_start)."""
    try:
        lines = Path(hit.path).read_text(encoding="utf-8").splitlines()
    except OSError:
        return False, False
    body = [t.strip() for t in text.strip().splitlines() if t.strip()]
    if not body:
        return True, True
    span = lines[line_start - 1 : line_end]
    inside = any(body[0][:40] in line for line in span) and any(body[-1][-40:] in line for line in span)
    return inside, 0 < line_start <= len(lines) and body[0][:40] in lines[line_start - 1]


def facts(args: argparse.Namespace) -> None:
    app = _app(args.index_db)
    cases = [c for c in load_cases(*args.cases) if c.answerable and c.key_facts]
    read: list[float] = []
    tokens: list[int] = []
    exact = inside = total = 0
    kept: list[int] = []
    event: dict[int, list[float]] = {}
    event_chars: dict[int, list[int]] = {}
    try:
        for case in cases:
            # as the answer service does: twice the passages asked for, then the first five passages
            hits = passages(app.search(case.question, k=10).hits, 5, overlap=args.overlap)
            kept.append(len(hits))
            for count in EVENT_SENTENCES:
                best = best_sentences(case.question, hits, count)
                said = "\n".join(w.text for w in best)
                event.setdefault(count, []).append(key_fact_recall(said, case.key_facts) or 0.0)
                event_chars.setdefault(count, []).append(len(said))
                if count == HIGHLIGHTS:
                    for w in best:
                        total += 1
                        ok, at = _line_check(hits[w.n - 1], w.line_start, w.line_end, w.text)
                        inside += ok
                        exact += at
            read.append(key_fact_recall("\n".join(h.text for h in hits), case.key_facts) or 0.0)
            messages, _ = build_messages(case.question, hits)
            tokens.append(sum(estimate_tokens(m["content"]) for m in messages))
    finally:
        app.close()
    print(
        f"{len(cases)} answerable cases with key facts; top-5 hybrid passages, repeats at overlap "
        f"{args.overlap:g} dropped (mean {statistics.fmean(kept):.2f} read)"
    )
    print(f"{'what the model reads':<20} {'facts kept':>10} {'prompt tok (est.)':>18}")
    print(f"{'whole passages':<20} {statistics.fmean(read):>10.3f} {statistics.median(tokens):>18.0f}")
    print(
        f"evidence sentences inside their line span in the file: {inside}/{total}; "
        f"starting exactly at line_start: {exact}/{total}"
    )
    print(f"{'best sentences':<16} {'facts kept':>10} {'characters P50':>18}")
    for count, values in event.items():
        note = " (the `evidence` event)" if count == HIGHLIGHTS else ""
        print(
            f"{count:<16} {statistics.fmean(values):>10.3f} {statistics.median(event_chars[count]):>18.0f}{note}"
        )
    wanted = {c.id for c in cases}
    for run in args.answers:
        answers = [r for r in read_jsonl(run / "cases.jsonl") if r["id"] in wanted]
        recall = [
            r["metrics"]["key_fact_recall"]
            for r in answers
            if r["metrics"].get("key_fact_recall") is not None
        ]
        chars = [len(r["detail"]["answer"]) for r in answers if not r["detail"]["refused"]]
        print(
            f"model answers of {run}: facts {statistics.fmean(recall):.3f} over {len(recall)} cases, "
            f"characters P50 {statistics.median(chars):.0f} (answered)"
        )


def latency(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
    from fakes.openai_server import FakeOpenAI  # type: ignore[import-not-found]

    app = _app(args.index_db)
    cases = load_cases(*args.cases)
    evidence_ms: list[float] = []
    first_ms: list[float] = []
    parts: dict[str, list[float]] = {"retrieval": [], "selection": []}
    try:
        with FakeOpenAI() as fake:
            settings = app.settings.model_copy(update={"llm_base_url": fake.base_url, "llm_model": "fake"})
            asyncio.run(_latency(app, settings, cases, evidence_ms, first_ms, parts))
    finally:
        app.close()
    print(f"{len(evidence_ms)} cases (gate-refused ones included: their evidence event is empty)")
    print(
        f"evidence event after the request: P50 {statistics.median(evidence_ms):.1f} ms, "
        f"P95 {sorted(evidence_ms)[int(0.95 * (len(evidence_ms) - 1))]:.1f} ms"
    )
    print(
        f"  of which retrieval (search + gate) P50 {statistics.median(parts['retrieval']):.1f} ms, "
        f"evidence selection P50 {statistics.median(parts['selection']):.1f} ms"
    )
    if first_ms:
        print(f"first token (scripted model): P50 {statistics.median(first_ms):.1f} ms")


async def _latency(app, settings, cases, evidence_ms, first_ms, parts) -> None:  # type: ignore[no-untyped-def]
    from citedocs.answer.retriever import LocalRetriever
    from citedocs.answer.service import AnswerService
    from citedocs.llm.client import LLMClient

    client = LLMClient.from_settings(settings)
    service = AnswerService(LocalRetriever(app), client, settings)
    try:
        await service.prepare("warm up the query embedder")
        for case in cases:
            started = time.perf_counter()
            prepared = await service.prepare(case.question)
            parts["retrieval"].append(prepared.retrieval_ms)
            parts["selection"].append(prepared.evidence_ms)
            async for event in service.generate(prepared):
                if event.event == "evidence":
                    evidence_ms.append((time.perf_counter() - started) * 1000)
                elif event.event == "token":
                    first_ms.append((time.perf_counter() - started) * 1000)
                    break
    finally:
        await client.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("facts", "latency"))
    parser.add_argument("--index-db", type=Path, required=True)
    parser.add_argument("--cases", action="append", type=Path, required=True)
    parser.add_argument(
        "--answers",
        action="append",
        type=Path,
        default=[],
        help="A committed answer run to set beside the best sentences (facts).",
    )
    parser.add_argument(
        "--overlap",
        type=float,
        default=0.0,
        help="drop passages this much covered by a better one (PASSAGE_OVERLAP)",
    )
    args = parser.parse_args()
    print(" · ".join(f"{k}: {v}" for k, v in header().items()))
    print("machine shared with other engineers' jobs: compare medians, not single runs")
    (facts if args.what == "facts" else latency)(args)


if __name__ == "__main__":
    main()
