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
import json
import subprocess
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _env import median, print_header

from citedocs.llm.llama import cpu_flags, free_port

VARIANTS = {"default (repacked)": [], "--no-repack": ["--no-repack"]}


def saved_prompts(run_dir: Path, count: int) -> list[list[dict[str, str]]]:
    rows = [json.loads(line) for line in (run_dir / "cases.jsonl").read_text(encoding="utf-8").splitlines()]
    prompts = [row["detail"]["prompt"] for row in rows if row.get("detail", {}).get("prompt")]
    if not prompts:
        raise SystemExit(f"{run_dir} holds no saved prompts (runs before issue 19 did not record them).")
    return prompts[:count]


def measure(
    server: str, gguf: str, extra: list[str], prompts: list[list[dict[str, str]]]
) -> list[tuple[float, float, int]]:
    port = free_port()
    process = subprocess.Popen([server, "-m", gguf, "--host", "127.0.0.1", "--port", str(port), "-c", "8192",
                                "--parallel", "1", *extra], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(timeout=600, trust_env=False) as client:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                try:
                    if client.get(url + "/health").status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                time.sleep(0.25)
            out = []
            for messages in prompts:
                body = {"messages": messages, "max_tokens": 64, "temperature": 0, "cache_prompt": False,
                        "ignore_eos": True}  # fmt: skip
                timings = client.post(url + "/v1/chat/completions", json=body).json()["timings"]
                out.append(
                    (timings["prompt_per_second"], timings["predicted_per_second"], timings["prompt_n"])
                )
            return out
    finally:
        process.terminate()
        process.wait(30)


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
            results[name] += measure(args.server, args.gguf, extra, prompts)
    print("| variant | prompt tokens P50 | prompt tokens/s P50 | generated tokens/s P50 |")
    print("|---|---|---|---|")
    for name, rows in results.items():
        print(f"| {name} | {median([r[2] for r in rows]):.0f} | {median([r[0] for r in rows]):.1f} | "
              f"{median([r[1] for r in rows]):.1f} |")  # fmt: skip
    base, fast = (median([r[0] for r in results[n]]) for n in VARIANTS)
    print(f"\nprompt reading, --no-repack / default: {fast / base:.2f}x")


if __name__ == "__main__":
    main()
