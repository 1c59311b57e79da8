"""How llama-server's thread count holds up when something else wants the CPU, interleaved, same model.

    .venv/bin/python bench/studies/bench_llama_threads.py --server MODELS_DIR/bin/llama-server \
        --gguf MODELS_DIR/gguf/qwen2.5-coder-1.5b-instruct-q4_k_m/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf \
        --prompts eval/baseline/answer-quotes-3 --count 2 --rounds 1

On a 2-core machine `citedocs serve` shares the CPU with itself: the embedder indexing a folder in the
background, the watcher, other requests. llama.cpp's default uses every core for both prompt reading and
generation, and its threads wait for each other at every step, so one busy core can stall them all. Each
round starts the server with each thread setting (`-t` generation, `-tb` prompt reading; `--no-repack` where
citedocs picks it), sends the same saved prompts with the cache off (64 tokens generated), once on an idle
machine and once beside one busy process (a pure-Python loop, as an embedder's tokenizer or the indexer is),
and records llama.cpp's own timings. Medians over rounds and prompts.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _env import median, print_header
from bench_server_builds import measure, saved_prompts

from citedocs.llm.llama import cpu_flags, repack_args

VARIANTS: dict[str, list[str]] = {
    "-t 2 (all cores, llama.cpp's default here)": ["-t", "2"],
    "-t 1": ["-t", "1"],
    "-t 1 -tb 2": ["-t", "1", "-tb", "2"],
}


def _busy() -> None:
    while True:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True)
    parser.add_argument("--gguf", required=True)
    parser.add_argument(
        "--prompts", type=Path, required=True, help="A run directory whose cases hold prompts."
    )
    parser.add_argument("--count", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    prompts = saved_prompts(args.prompts, args.count)
    print_header("llama-server threads, idle and beside one busy process")
    print(
        f"- cores: {os.cpu_count()}; model: {Path(args.gguf).name}; {len(prompts)} prompts, {args.rounds} rounds\n"
    )
    repack = repack_args("auto", cpu_flags())
    results: dict[tuple[str, str], list[tuple[float, float, int]]] = {}
    for _ in range(args.rounds):
        for load in ("idle", "one busy process"):
            hog = multiprocessing.Process(target=_busy, daemon=True) if load != "idle" else None
            if hog is not None:
                hog.start()
            try:
                for name, extra in VARIANTS.items():
                    rows = measure([args.server], dict(os.environ), args.gguf, prompts, [*repack, *extra])[1]
                    results.setdefault((load, name), []).extend(rows)
            finally:
                if hog is not None:
                    hog.terminate()
                    hog.join()
    print("| machine | threads | prompt tokens/s P50 | generated tokens/s P50 |")
    print("|---|---|---|---|")
    for (load, name), rows in results.items():
        print(
            f"| {load} | {name} | {median([r[0] for r in rows]):.1f} | {median([r[1] for r in rows]):.1f} |"
        )


if __name__ == "__main__":
    main()
