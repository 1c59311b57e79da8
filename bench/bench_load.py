"""Load and soak of a running `citedocs serve`: concurrent users on POST /search and POST /ask (a scripted model).

Each level runs `--duration` seconds with N users in a closed loop; every user asks /search, then /ask (server-sent
events, read to the end), and again. An /ask refused with 503 (`busy`: the server sheds load beyond
CITEDOCS_MAX_CONCURRENT answers in flight, on purpose) is counted apart, not as an error, and the user waits its
Retry-After (at most 5 s), as bench/locustfile.py does. Errors are transport failures, any other status, and
answers that end in an `error` event. Every 2 s the server's RSS, open descriptors and threads are read from
/proc; the leak check compares RSS at the end of each level with RSS after its warm-up (the first quarter).

    python bench/bench_load.py --duration 600                       # the published run: 10 minutes a level
    python bench/bench_load.py --duration 60 --levels 16,32,64      # a short run

The script starts everything itself in a temporary folder: ../shared/tools/fake_openai.py (the scripted model),
`citedocs add` of ../shared/data/claude-docs-qa/docs (keyword index, no embedder) and `citedocs serve`.
No locust needed (it is not a dependency); httpx's async client drives the users.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from _env import SHARED_DATA, median, pct, print_header

from fakes.live_server import live_process

QUESTIONS = [
    "How do I install Claude Code?",
    "Which models support prompt caching?",
    "How do I stream a response?",
    "What is the context window of the model?",
    "How do I use tools with the API?",
    "How are rate limits applied?",
]
SAMPLE_S = 2.0
WARMUP_SHARE = 0.25


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Level:
    users: int
    search_ms: list[float] = field(default_factory=list)
    ask_ms: list[float] = field(default_factory=list)
    busy: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    samples: list[tuple[float, int, int, int]] = field(default_factory=list)  # (s, rss KB, fds, threads)

    def error(self, what: str) -> None:
        self.errors[what] = self.errors.get(what, 0) + 1


def proc_sample(pid: int) -> tuple[int, int, int]:
    status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    rss = int(fields["VmRSS"].split()[0])
    threads = int(fields["Threads"])
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    return rss, fds, threads


async def user(client: httpx.AsyncClient, url: str, n: int, level: Level, stop: float) -> None:
    i = n
    while time.monotonic() < stop:
        question = QUESTIONS[i % len(QUESTIONS)]
        i += 1
        started = time.perf_counter()
        try:
            reply = await client.post(f"{url}/search", json={"query": question, "k": 5, "mode": "keyword"})
            if reply.status_code == 200:
                level.search_ms.append((time.perf_counter() - started) * 1000)
            else:
                level.error(f"search {reply.status_code}")
        except httpx.HTTPError as exc:
            level.error(f"search {type(exc).__name__}")
        if time.monotonic() >= stop:
            break
        started = time.perf_counter()
        try:
            async with client.stream("POST", f"{url}/ask", json={"question": question}) as reply:
                if reply.status_code == 503:
                    level.busy += 1
                    await reply.aread()
                    wait = min(5.0, float(reply.headers.get("Retry-After", "1")))
                    await asyncio.sleep(min(wait, max(0.0, stop - time.monotonic())))
                    continue
                if reply.status_code != 200:
                    level.error(f"ask {reply.status_code}")
                    continue
                event = ""
                failed = False
                async for line in reply.aiter_lines():
                    if line.startswith("event:"):
                        event = line.split(":", 1)[1].strip()
                        failed = failed or event == "error"
                if failed:
                    level.error("ask error event")
                else:
                    level.ask_ms.append((time.perf_counter() - started) * 1000)
        except httpx.HTTPError as exc:
            level.error(f"ask {type(exc).__name__}")


async def sampler(pid: int, level: Level, stop: float, t0: float) -> None:
    while time.monotonic() < stop:
        rss, fds, threads = proc_sample(pid)
        level.samples.append((time.monotonic() - t0, rss, fds, threads))
        await asyncio.sleep(SAMPLE_S)
    rss, fds, threads = proc_sample(pid)
    level.samples.append((time.monotonic() - t0, rss, fds, threads))


async def run_level(url: str, pid: int, users: int, duration: float) -> Level:
    level = Level(users)
    # An idle connection is dropped by the client before uvicorn's 5 s keep-alive ends it: with both at 5 s, a
    # user back from a 503's Retry-After sends on a connection the server is closing (ReadError, 8 of them at 64
    # users in the first run), a client-side race rather than a server failure.
    limits = httpx.Limits(
        max_connections=users + 4, max_keepalive_connections=users + 4, keepalive_expiry=2.0
    )
    async with httpx.AsyncClient(timeout=httpx.Timeout(120.0), limits=limits) as client:
        t0 = time.monotonic()
        stop = t0 + duration
        await asyncio.gather(
            sampler(pid, level, stop, t0), *(user(client, url, n, level, stop) for n in range(users))
        )
    return level


def report(level: Level, duration: float) -> dict[str, object]:
    rss = [s[1] for s in level.samples]
    warm = [s for s in level.samples if s[0] >= duration * WARMUP_SHARE]
    after_warmup = warm[0][1] if warm else rss[0]
    growth = (rss[-1] - after_warmup) / after_warmup * 100
    return {
        "users": level.users,
        "searches": len(level.search_ms),
        "answers": len(level.ask_ms),
        "busy_503": level.busy,
        "errors": sum(level.errors.values()),
        "error_kinds": level.errors,
        "search_p50_ms": round(median(level.search_ms), 1),
        "search_p95_ms": round(pct(level.search_ms, 95), 1),
        "ask_p50_ms": round(median(level.ask_ms), 1),
        "ask_p95_ms": round(pct(level.ask_ms, 95), 1),
        "rss_start_mb": round(rss[0] / 1024, 1),
        "rss_after_warmup_mb": round(after_warmup / 1024, 1),
        "rss_end_mb": round(rss[-1] / 1024, 1),
        "rss_max_mb": round(max(rss) / 1024, 1),
        "rss_growth_after_warmup_pct": round(growth, 2),
        "fds_start_end_max": [level.samples[0][2], level.samples[-1][2], max(s[2] for s in level.samples)],
        "threads_start_end_max": [
            level.samples[0][3],
            level.samples[-1][3],
            max(s[3] for s in level.samples),
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--duration", type=float, default=600.0, help="seconds per level (default 600)")
    parser.add_argument("--levels", default="16,32,64", help="concurrent users per level")
    parser.add_argument("--docs", type=Path, default=SHARED_DATA / "claude-docs-qa" / "docs")
    parser.add_argument("--json", type=Path, help="also write the report here")
    args = parser.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    print_header(f"citedocs load + soak: {args.levels} users, {args.duration:g} s per level")
    fake = SHARED_DATA.parent / "tools" / "fake_openai.py"
    with tempfile.TemporaryDirectory(prefix="citedocs-load-") as tmp:
        work = Path(tmp)
        llm_port, port = free_port(), free_port()
        env = {
            **os.environ,
            "CITEDOCS_DB": str(work / "index.sqlite3"),
            "CITEDOCS_EMBEDDER": "none",
            "CITEDOCS_LLM_BASE_URL": f"http://127.0.0.1:{llm_port}/v1",
            "XDG_DATA_HOME": str(work / "data"),
            "XDG_CONFIG_HOME": str(work / "config"),
        }
        subprocess.run(
            [sys.executable, "-m", "citedocs", "add", str(args.docs)],
            env=env,
            check=True,
            capture_output=True,
        )
        model = [sys.executable, str(fake), str(llm_port), "--delay-ms", "20"]
        serve = [sys.executable, "-m", "citedocs", "serve", "--port", str(port)]
        url = f"http://127.0.0.1:{port}"
        llm = f"http://127.0.0.1:{llm_port}"
        with (
            live_process(model, env, work / "model.log", llm, health="/health"),
            live_process(serve, env, work / "serve.log", url) as server,
        ):
            results = []
            for users in levels:
                level = asyncio.run(run_level(url, server.pid, users, args.duration))
                results.append(report(level, args.duration))
                print(json.dumps(results[-1]), flush=True)
            soak_rss = [r["rss_end_mb"] for r in results]
    print()
    print(
        "| users | searches | answers | busy 503 | errors | search P50 / P95 ms | ask P50 / P95 ms | "
        "RSS after warm-up → end MB (growth) | fds start/end/max | threads start/end/max |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r['users']} | {r['searches']} | {r['answers']} | {r['busy_503']} | {r['errors']} | "
            f"{r['search_p50_ms']} / {r['search_p95_ms']} | {r['ask_p50_ms']} / {r['ask_p95_ms']} | "
            f"{r['rss_after_warmup_mb']} → {r['rss_end_mb']} ({r['rss_growth_after_warmup_pct']:+.2f} %) | "
            f"{'/'.join(map(str, r['fds_start_end_max']))} | {'/'.join(map(str, r['threads_start_end_max']))} |"
        )
    print(f"\nRSS at the end of each level (MB): {soak_rss}")
    if args.json:
        args.json.write_text(json.dumps({"levels": results}, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
