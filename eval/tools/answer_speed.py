"""Before/after of answer runs on the cases both ran: prompt tokens, time to first token, total time, quality.

    .venv/bin/python eval/tools/answer_speed.py eval/baseline/answer-full runs/answer-evidence

Per run, over the cases that reached the model in both runs: median prompt tokens, TTFT and total time P50
and P95, the prompt tokens llama.cpp took from its cache (`usage.cached_tokens`, where recorded); and, over
every shared case, the means of key-fact recall, wrong refusals, citation precision and faithfulness.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from _env import header

from citedocs.eval.runs import read_run

QUALITY = (
    "key_fact_recall",
    "wrong_refusal_rate",
    "correct_refusal",
    "citation_support",
    "citation_precision",
    "faithfulness",
)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    args = parser.parse_args()
    print(" · ".join(f"{k}: {v}" for k, v in header().items()))
    runs = [read_run(r) for r in args.runs]
    shared = set.intersection(*(set(r.per_case) for r in runs))
    modelled = {
        c for c in shared if all((r.details.get(c, {}).get("usage") or {}).get("prompt_tokens") for r in runs)
    }
    print(f"{len(shared)} shared cases, {len(modelled)} reached the model in every run")
    head = ["run", "prompt tok P50", "cached P50", "TTFT P50 s", "TTFT P95 s", "total P50 s", "total P95 s"]
    print(" | ".join(head))
    for path, run in zip(args.runs, runs, strict=True):
        usage = [run.details[c]["usage"] for c in modelled]
        timings = [run.details[c]["timings"] for c in modelled]
        cached = [u["cached_tokens"] for u in usage if "cached_tokens" in u]
        ttft = [t["ttft_ms"] / 1000 for t in timings if t.get("ttft_ms") is not None]
        total = [t["total_ms"] / 1000 for t in timings]
        print(
            " | ".join(
                [
                    path.name,
                    f"{statistics.median(u['prompt_tokens'] for u in usage):.0f}",
                    f"{statistics.median(cached):.0f}" if cached else "—",
                    f"{statistics.median(ttft):.1f}",
                    f"{_pct(ttft, 0.95):.1f}",
                    f"{statistics.median(total):.1f}",
                    f"{_pct(total, 0.95):.1f}",
                ]
            )
        )
    print("run | " + " | ".join(QUALITY))
    for path, run in zip(args.runs, runs, strict=True):
        cells = []
        for metric in QUALITY:
            values = [v for c in shared if (v := run.per_case[c].get(metric)) is not None]
            cells.append(f"{statistics.fmean(values):.3f} (n={len(values)})" if values else "—")
        print(f"{path.name} | " + " | ".join(cells))


if __name__ == "__main__":
    main()
