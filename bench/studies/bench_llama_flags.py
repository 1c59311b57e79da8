"""How fast llama-server reads our prompts with and without weight repacking, interleaved, same model.

    .venv/bin/python bench/studies/bench_llama_flags.py --server ~/.cache/citedocs-dev/bin/llama-server \
        --gguf ~/.cache/citedocs-dev/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf \
        --prompts eval/baseline/answer-evidence-450-full --count 6 --rounds 3

Each round starts one server per variant (llama.cpp's default, i.e. repacked weights, and `--no-repack`,
which `citedocs.llm.llama.repack_args` picks on CPUs with AVX-512 VNNI), sends the same saved prompts
(`prompt` of a run's cases.jsonl: the exact messages the model read) with the cache off, and records
llama.cpp's own timings: prompt tokens/s and generated tokens/s (64 tokens, end-of-text ignored).
Medians over rounds and prompts; the ratio is no-repack over default.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _env import median, print_header
from bench_server_builds import measure, saved_prompts

from citedocs.llm.llama import cpu_flags

VARIANTS: dict[str, list[str]] = {"default (repacked)": [], "--no-repack": ["--no-repack"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True)
    parser.add_argument("--gguf", required=True)
    parser.add_argument(
        "--prompts", type=Path, required=True, help="A run directory whose cases hold prompts."
    )
    parser.add_argument("--count", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    prompts = saved_prompts(args.prompts, args.count)
    print_header("llama-server prompt reading: repacked weights vs --no-repack")
    wanted = sorted(f for f in cpu_flags() if f.startswith(("avx", "amx")))
    print(f"- CPU vector flags: {' '.join(wanted) or 'none found'}")
    print(
        f"- model: {Path(args.gguf).name}; {len(prompts)} prompts from {args.prompts}, {args.rounds} rounds\n"
    )
    results: dict[str, list[tuple[float, float, int]]] = {name: [] for name in VARIANTS}
    for _ in range(args.rounds):
        for name, extra in VARIANTS.items():
            results[name] += measure([args.server], dict(os.environ), args.gguf, prompts, extra)[1]
    print("| variant | prompt tokens P50 | prompt tokens/s P50 | generated tokens/s P50 |")
    print("|---|---|---|---|")
    for name, rows in results.items():
        print(
            f"| {name} | {median([r[2] for r in rows]):.0f} | {median([r[0] for r in rows]):.1f} | "
            f"{median([r[1] for r in rows]):.1f} |"
        )
    base, fast = (median([r[0] for r in results[n]]) for n in VARIANTS)
    print(f"\nprompt reading, --no-repack / default: {fast / base:.2f}x")


if __name__ == "__main__":
    main()
