"""The loop guard replayed on every committed answer: which it stops, how much it saves, what it costs.

    PYTHONPATH=src .venv/bin/python bench/studies/bench_repetition.py [eval/baseline]

Each model answer (`raw_answer`) of every run under the folder (the `-hand` twins repeat their run and are left
out) is fed to `RepetitionGuard` in 4-character pieces, as a stream arrives, with the default setting and with
3 and 5 copies. For each stopped answer: where it stopped, what is kept, and the tokens not generated (the
answer's `completion_tokens` times the share of its text left unread); "guard ms" is the guard's own time per
answer (every check of one answer, summed).

The live comparison (the answer service with the guard on and off, `--live`) is gone with the setting that
switched it off: its figures are in docs/decisions/answers.md, its code in git history (added in 934235f).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from _env import header

from citedocs.answer.repetition import STOP_REPEATS, RepetitionGuard

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", type=Path, default=ROOT / "eval" / "baseline")
    args = parser.parse_args()
    for key, value in header().items():
        print(f"{key}: {value}")
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
