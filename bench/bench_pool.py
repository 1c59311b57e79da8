"""Locust against one replica + one llama.cpp server, then two replicas + two llama.cpp servers, one run.

    .venv/bin/python bench/bench_pool.py --gguf MODEL.gguf [--llama-server PATH] [--users 4] [--minutes 3]

Everything runs on loopback: a PostgreSQL 16 + pgvector from the `pgserver` wheel holding the claude-docs
folder (keyword index: the load is on the model, not on search), llama.cpp servers with one thread and one
slot each (so that each server is one core's worth of model), and `citedocs serve` replicas whose
CITEDOCS_LLM_BASE_URL lists every llama.cpp server (the pool spreads answers by free slots). Locust users ask
back to back (bench/locustfile.py), spread over the replicas in turn. Throughput is answers finished per
minute; the ratio of the two runs is the figure this measures.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import httpx
from _env import SHARED_DATA, header, print_header

from citedocs.llm.llama import free_port
from fakes.live_server import live_process

REPO = Path(__file__).resolve().parents[1]
WAIT_S = 300  # a llama-server loading its model on a busy machine


def run_config(
    name: str, replicas: int, servers: int, args: argparse.Namespace, db: str, work: Path
) -> dict[str, Any]:
    with contextlib.ExitStack() as stack:
        llm_urls = []
        for n in range(servers):
            port = free_port()
            stack.enter_context(
                live_process(
                    [
                        args.llama_server,
                        "-m",
                        args.gguf,
                        "--host",
                        "127.0.0.1",
                        "--port",
                        str(port),
                        "-t",
                        "1",
                        "--parallel",
                        "1",
                        "-c",
                        "4096",
                    ],
                    None,
                    work / f"{name}-llama{n}.log",
                    f"http://127.0.0.1:{port}",
                    WAIT_S,
                    health="/health",
                )
            )
            llm_urls.append(f"http://127.0.0.1:{port}/v1")
        hosts = []
        for n in range(replicas):
            port = free_port()
            env = {
                **os.environ,
                "CITEDOCS_DB": db,
                "CITEDOCS_EMBEDDER": "none",
                "CITEDOCS_INDEX_ON_START": "false",
                "CITEDOCS_LLM_BASE_URL": ",".join(llm_urls),
                "CITEDOCS_LLM_SLOTS": "1",
                "CITEDOCS_MAX_CONCURRENT": str(args.max_concurrent),
                "CITEDOCS_LLM_MAX_TOKENS": str(args.max_tokens),
                "CITEDOCS_CONFIG": str(work / "none.toml"),
            }
            stack.enter_context(
                live_process(
                    [sys.executable, "-m", "citedocs", "serve", "--port", str(port)],
                    env,
                    work / f"{name}-api{n}.log",
                    f"http://127.0.0.1:{port}",
                    WAIT_S,
                )
            )
            hosts.append(f"http://127.0.0.1:{port}")
        prefix = work / name
        env = {
            **os.environ,
            "CITEDOCS_BENCH_HOSTS": ",".join(hosts),
            "CITEDOCS_BENCH_CASES": str(SHARED_DATA / "claude-docs-qa" / "cases.jsonl"),
        }
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "locust",
                "-f",
                str(REPO / "bench" / "locustfile.py"),
                "--headless",
                "-H",
                hosts[0],
                "-u",
                str(args.users),
                "-r",
                str(args.users),
                "-t",
                f"{int(args.minutes * 60)}s",
                "--stop-timeout",
                "120",
                "--csv",
                str(prefix),
                "--only-summary",
            ],
            env=env,
            check=False,
            capture_output=True,
            text=True,
            timeout=args.minutes * 60 + 300,
        )
        if not (work / f"{name}_stats.csv").exists():
            raise RuntimeError(f"locust wrote no statistics: {done.stderr[-3000:]}")
        healthz = [httpx.get(f"{h}/healthz", timeout=10).json() for h in hosts]
        stats = [httpx.get(f"{h}/stats", timeout=10).json() for h in hosts]
    rows = {r["Name"]: r for r in csv.DictReader((work / f"{name}_stats.csv").open(encoding="utf-8"))}
    failures = list(csv.DictReader((work / f"{name}_failures.csv").open(encoding="utf-8")))
    answers = int(rows.get("answer", {}).get("Request Count", 0) or 0) + int(
        rows.get("refused", {}).get("Request Count", 0) or 0
    )
    served = [e["served"] for h in healthz for e in h["model"].get("endpoints", [])]
    return {
        "config": name,
        "replicas": replicas,
        "llama_servers": servers,
        "users": args.users,
        "minutes": args.minutes,
        "answers": answers,
        "answers_per_min": round(answers / args.minutes, 2),
        "ttft_p50_s": round(float(rows.get("ttft", {}).get("50%", 0) or 0) / 1000, 1),
        "answer_p50_s": round(float(rows.get("answer", {}).get("50%", 0) or 0) / 1000, 1),
        "busy_503": int(rows.get("busy (503)", {}).get("Request Count", 0) or 0),
        "failures": sum(int(f["Occurrences"]) for f in failures),
        "answers_per_replica": [s["answers_since_start"] for s in stats],
        "served_per_endpoint_seen_by_replica_0": served[:servers],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gguf", required=True)
    parser.add_argument("--llama-server", default=os.environ.get("CITEDOCS_LLM_SERVER", "llama-server"))
    parser.add_argument("--users", type=int, default=4)
    parser.add_argument("--minutes", type=float, default=3)
    parser.add_argument("--max-concurrent", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--out", default="bench/out/pool.json")
    args = parser.parse_args()
    print_header("Locust: 1 replica + 1 llama.cpp vs 2 replicas + 2 llama.cpp, one PostgreSQL")
    print(
        f"model {Path(args.gguf).name}; llama.cpp -t 1 --parallel 1 each; {args.users} users, {args.minutes} min per run\n"
    )
    work = Path(tempfile.mkdtemp(prefix="citedocs-bench-pool-"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver

        server = pgserver.get_server(work / "pgdata", cleanup_mode="stop")
    rows = []
    try:
        db = server.get_uri()
        env = {
            **os.environ,
            "CITEDOCS_DB": db,
            "CITEDOCS_EMBEDDER": "none",
            "CITEDOCS_CONFIG": str(work / "none.toml"),
        }
        subprocess.run(
            [sys.executable, "-m", "citedocs", "add", str(SHARED_DATA / "claude-docs-qa" / "docs")],
            env=env,
            check=True,
            capture_output=True,
            timeout=600,
        )
        for name, replicas, servers in (("one", 1, 1), ("two", 2, 2)):
            row = run_config(name, replicas, servers, args, db, work)
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        server.cleanup()
        shutil.rmtree(work, ignore_errors=True)
    cols = [
        "config",
        "replicas",
        "llama_servers",
        "answers",
        "answers_per_min",
        "ttft_p50_s",
        "answer_p50_s",
        "busy_503",
        "failures",
        "answers_per_replica",
    ]
    print("\n| " + " | ".join(cols) + " |\n" + "|---" * len(cols) + "|")
    for row in rows:
        print("| " + " | ".join(str(row[c]) for c in cols) + " |")
    if len(rows) == 2 and rows[0]["answers_per_min"]:
        print(f"\nthroughput ratio two/one: {rows[1]['answers_per_min'] / rows[0]['answers_per_min']:.2f}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"header": header(), "rows": rows}, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
