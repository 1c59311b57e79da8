"""The prebuilt llama.cpp server (the `xllamacpp` wheel) against a native build, interleaved, same model.

    .venv/bin/python bench/bench_server_builds.py --wheel-dir DIR_WITH_UNPACKED_XLLAMACPP \
        --native ~/.cache/citedocs-dev/bin/llama-server \
        --gguf ~/.cache/citedocs-dev/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf \
        --prompts eval/baseline/answer-evidence-450-full --count 4 --rounds 3

DIR_WITH_UNPACKED_XLLAMACPP is what `citedocs model install` makes under `MODELS_DIR/prebuilt/` (or the pinned
wheel unpacked with `python -m zipfile -e`). Each round starts each server in turn (the prebuilt one through
`citedocs.llm.xserver`, exactly as `model install`'s launcher runs it), with the flags citedocs gives it
(`--parallel 1`, `--no-repack` where `repack_args` picks it), sends the same saved prompts (the exact messages
the model read in an evaluation run) with the prompt cache off, and records llama.cpp's own timings: prompt
tokens/s and generated tokens/s (64 tokens, end-of-text ignored), and the seconds from start to /health 200.
Medians over rounds and prompts. A missing native build is reported, not faked.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _env import median, print_header

from citedocs.llm.llama import cpu_flags, free_port, repack_args


def saved_prompts(run_dir: Path, count: int) -> list[list[dict[str, str]]]:
    rows = [json.loads(line) for line in (run_dir / "cases.jsonl").read_text(encoding="utf-8").splitlines()]
    prompts = [row["detail"]["prompt"] for row in rows if row.get("detail", {}).get("prompt")]
    if not prompts:
        raise SystemExit(f"{run_dir} holds no saved prompts.")
    return prompts[:count]


def measure(
    command: list[str],
    env: dict[str, str],
    gguf: str,
    prompts: list[list[dict[str, str]]],
    extra: list[str] | None = None,
) -> tuple[float, list[tuple[float, float, int]]]:
    """(seconds from start to /health 200, llama.cpp's timings of each prompt); `extra`: the server flags
    beyond the common ones (None: the repacking flag citedocs picks for this CPU). The llama-flags study
    (bench/studies/bench_llama_flags.py) measures with it too."""
    port = free_port()
    flags = repack_args("auto", cpu_flags()) if extra is None else extra
    began = time.monotonic()
    process = subprocess.Popen(
        [
            *command,
            "-m",
            gguf,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "-c",
            "8192",
            "--parallel",
            "1",
            *flags,
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(timeout=900, trust_env=False) as client:
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline:
                try:
                    if client.get(url + "/health").status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                time.sleep(0.25)
            ready = time.monotonic() - began
            out = []
            for messages in prompts:
                body = {
                    "messages": messages,
                    "max_tokens": 64,
                    "temperature": 0,
                    "cache_prompt": False,
                    "ignore_eos": True,
                }
                try:
                    timings = client.post(url + "/v1/chat/completions", json=body).json()["timings"]
                except httpx.HTTPError as exc:  # a starved machine: say so, keep the other rows
                    print(f"- {command[-1]}: a prompt failed ({type(exc).__name__}); left out")
                    continue
                out.append(
                    (timings["prompt_per_second"], timings["predicted_per_second"], timings["prompt_n"])
                )
            return ready, out
    finally:
        process.terminate()
        process.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel-dir", type=Path, required=True, help="the unpacked xllamacpp wheel")
    parser.add_argument("--native", default=str(Path.home() / ".cache/citedocs-dev/bin/llama-server"))
    parser.add_argument("--gguf", required=True)
    parser.add_argument(
        "--prompts", type=Path, required=True, help="A run directory whose cases hold prompts."
    )
    parser.add_argument("--count", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    prompts = saved_prompts(args.prompts, args.count)
    print_header("llama.cpp server: prebuilt xllamacpp wheel vs native build (shared 2-core machine)")
    wanted = sorted(f for f in cpu_flags() if f.startswith(("avx", "amx")))
    print(f"- CPU vector flags: {' '.join(wanted) or 'none found'}")
    print(f"- load average at start: {os.getloadavg()[0]:.1f}")
    print(
        f"- model: {Path(args.gguf).name}; {len(prompts)} prompts from {args.prompts}, {args.rounds} rounds\n"
    )
    prebuilt_env = {**os.environ, "PYTHONPATH": str(args.wheel_dir.resolve())}
    variants: dict[str, tuple[list[str], dict[str, str]]] = {
        "prebuilt (xllamacpp 2026.10.11549, AVX2)": (
            [sys.executable, "-m", "citedocs.llm.xserver"],
            prebuilt_env,
        )
    }
    if os.access(args.native, os.X_OK):
        variants["native build (llama.cpp 11434, -march=native)"] = ([args.native], dict(os.environ))
    else:
        print(f"- native build: none at {args.native} (not measured)\n")
    results: dict[str, list[tuple[float, float, int]]] = {name: [] for name in variants}
    starts: dict[str, list[float]] = {name: [] for name in variants}
    names = list(variants)
    for round_ in range(args.rounds):
        for name in names if round_ % 2 == 0 else names[::-1]:  # alternate who goes first
            ready, rows = measure(*variants[name], args.gguf, prompts)
            starts[name].append(ready)
            results[name] += rows
            for prompt_rate, gen_rate, n in rows:  # as they come, so a run cut short still shows them
                print(
                    f"- round {round_ + 1}, {name}: ready {ready:.1f} s, {n} prompt tokens at "
                    f"{prompt_rate:.1f}/s, generated {gen_rate:.1f}/s",
                    flush=True,
                )
    print(
        "| server | start to ready s P50 | prompt tokens P50 | prompt tokens/s P50 | generated tokens/s P50 |"
    )
    print("|---|---|---|---|---|")
    for name, rows in results.items():
        print(
            f"| {name} | {median(starts[name]):.1f} | {median([r[2] for r in rows]):.0f} | "
            f"{median([r[0] for r in rows]):.1f} | {median([r[1] for r in rows]):.1f} |"
        )
    if len(names) == 2:
        (a, b) = ([median([r[i] for r in results[n]]) for n in names] for i in (0, 1))
        print(f"\nprebuilt / native: prompt {a[0] / a[1]:.2f}x, generation {b[0] / b[1]:.2f}x")


if __name__ == "__main__":
    main()
