"""The loop guard replayed on every committed answer: which it stops, how much it saves, what it costs.

    PYTHONPATH=src .venv/bin/python bench/studies/bench_repetition.py [eval/baseline]

Each model answer (`raw_answer`) of every run under the folder (the `-hand` twins repeat their run and are left
out) is fed to `RepetitionGuard` in 4-character pieces, as a stream arrives, with the default setting and with
3 and 5 copies. For each stopped answer: where it stopped, what is kept, and the tokens not generated (the
answer's `completion_tokens` times the share of its text left unread); "guard ms" is the guard's own time per
answer (every check of one answer, summed).

    PYTHONPATH=src .venv/bin/python bench/studies/bench_repetition.py --live --index-db IDX --base-url URL $CASES \
        --ids 093,1be7fb77 --rounds 3 --temperature 0

`--live` asks the answer service itself (this index, a real model server) each named case's question with the
guard on (the default setting) and off (0), interleaved per round, and prints what each answer cost.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from _env import header

from citedocs.answer.repetition import STOP_REPEATS, RepetitionGuard
from citedocs.eval.cases import load_cases
from citedocs.llm.client import LLMClient
from citedocs.service import Citedocs
from citedocs.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


def replay(raw: str, repeats: int) -> tuple[int | None, int, float]:
    """(cut offset, characters read when it stopped, guard seconds)."""
    guard = RepetitionGuard(repeats)
    spent = 0.0
    for start in range(0, len(raw), 4):
        began = time.perf_counter()
        cut = guard.feed(raw[start : start + 4])
        spent += time.perf_counter() - began
        if cut is not None:
            return cut, start + 4, spent
    return None, len(raw), spent


async def ask(app: Citedocs, base_url: str, question: str) -> dict[str, object]:
    async with LLMClient(base_url, "local", read_timeout_s=600) as llm:
        return await app.answer_service(llm).answer(question)


def live(args: argparse.Namespace) -> None:
    raise SystemExit(
        "The live comparison needs the guard switched off inside the answer service, and CITEDOCS_ANSWER_STOP_REPEATS "
        "became the constant STOP_REPEATS (answer/repetition.py) once the decision was taken (docs/benchmarks.md); "
        "the offline mode (over saved runs) still compares any number of copies."
    )
    cases = {c.id: c for c in load_cases(*args.cases)}
    default = STOP_REPEATS
    apps = {repeats: Citedocs(Settings(db=str(args.index_db))) for repeats in (default, 0)}
    print(f"temperature {args.temperature}; guard on = {default} copies, off = 0")
    print("| case | round | guard | finish | completion tokens | whole answer s | answer characters |")
    print("|---|---|---|---|---|---|---|")
    try:
        for round_ in range(1, args.rounds + 1):
            for case_id in args.ids.split(","):
                for repeats, app in apps.items():
                    data = asyncio.run(ask(app, args.base_url, cases[case_id].question))
                    usage = data["usage"]
                    timings = data["timings"]
                    assert isinstance(usage, dict) and isinstance(timings, dict)
                    guard = "on" if repeats else "off"
                    print(f"| {case_id} | {round_} | {guard} | {data['finish_reason']} | {usage['completion_tokens']} "
                          f"| {timings['total_ms'] / 1000:.1f} | {len(str(data['answer']))} |")  # fmt: skip
    finally:
        for app in apps.values():
            app.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", type=Path, default=ROOT / "eval" / "baseline")
    parser.add_argument("--live", action="store_true")
    parser.add_argument("--index-db", type=Path)
    parser.add_argument("--base-url")
    parser.add_argument("--cases", action="append", type=Path, default=[])
    parser.add_argument("--ids", default="093,1be7fb77")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--temperature", type=float, default=0.0)
    args = parser.parse_args()
    for key, value in header().items():
        print(f"{key}: {value}")
    if args.live:
        if not (args.index_db and args.base_url and args.cases):
            parser.error("--live needs --index-db, --base-url and --cases")
        live(args)
        return
    answers = []
    for cases in sorted(args.folder.glob("*/cases.jsonl")):
        if cases.parent.name.endswith("-hand"):
            continue
        for line in cases.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            detail = row.get("detail") or {}
            if detail.get("raw_answer"):
                answers.append((cases.parent.name, row["id"], detail))
    default = STOP_REPEATS
    print(f"{len(answers)} model answers in {args.folder}")
    print("| copies | answers stopped | tokens not generated (sum) | guard ms per answer P50 / max |")
    print("|---|---|---|---|")
    stopped_default = []
    for repeats in sorted({3, default, 5}):
        stopped, saved, spent = [], 0, []
        for run, case, detail in answers:
            raw = detail["raw_answer"]
            cut, read, seconds = replay(raw, repeats)
            spent.append(seconds * 1000)
            if cut is not None:
                tokens = (detail.get("usage") or {}).get("completion_tokens") or 0
                saved += round(tokens * (1 - read / len(raw)))
                stopped.append((run, case, len(raw), read, raw[:cut]))
        if repeats == default:
            stopped_default = stopped
        mark = " (default)" if repeats == default else ""
        print(
            f"| {repeats}{mark} | {len(stopped)} | {saved} | {statistics.median(spent):.2f} / {max(spent):.2f} |"
        )
    print(f"\nStopped with the default ({default} copies):")
    for run, case, size, read, kept in stopped_default:
        tail = " ".join(kept[-90:].split())
        print(f"- {run} {case}: read {read} of {size} characters, kept {len(kept)}: ...{tail}")


if __name__ == "__main__":
    main()
