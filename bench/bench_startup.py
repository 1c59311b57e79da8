"""Whole-process start-up: what a person (or an agent spawning `citedocs mcp`) waits for.

    .venv/bin/python bench/bench_startup.py [--runs 5] [--before-src /tmp/before/src] [--qmd DIR]
    .venv/bin/python bench/bench_startup.py --install-qmd DIR      # once: bun and qmd, pinned, from npm

On the sample docs, interleaved run by run: `citedocs search` as a one-off process (default mode, and
`--mode keyword`), the same with a `citedocs serve` running on the index, and `citedocs mcp` from spawn to the
answer to `tools/list` (what a client waits for before it can show the tools) and to the answer of the first
tool call sent after it (a `search`, as an agent's first call is), and the answer to a tool only the MCP SDK
serves called after the handshake and 2.5 s of idling (the SDK is imported in the background). `--before-src` points at the `src` folder of another checkout (e.g. the commit before
a change: `git worktree add /tmp/before COMMIT`) whose code is timed the same way in the same run, for a
side-by-side. Medians of wall-clock seconds, and of the CPU seconds the child process used (user + system,
from `wait4`; for `citedocs mcp` also what it had used when the search answer arrived, from /proc): on a shared
machine CPU time is the steadier figure.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _env import print_header

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "examples" / "sample-docs"
QUERY = "log formats"  # found by both: qmd's keyword search wants every word of it in a markdown file


def _env(src: Path | None, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITEDOCS_")}
    env.update(
        {
            "XDG_DATA_HOME": str(home / "data"),
            "XDG_CONFIG_HOME": str(home / "config"),
            "CITEDOCS_ENV_FILE": "",
        }
    )
    if src is not None:
        env["PYTHONPATH"] = str(src)
    return env


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "citedocs", *args]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of `command` (it must succeed)."""
    cpu, started = _children_cpu(), time.perf_counter()
    subprocess.run(command, env=env, capture_output=True, check=True, timeout=120)
    return time.perf_counter() - started, _children_cpu() - cpu


def _process_cpu(pid: int) -> float:
    """CPU seconds (user + system) process `pid` has used so far; NaN where /proc cannot tell."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# What a client sends first: initialize (answered) and the initialized notification.
HANDSHAKE = [
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"},
        },
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
]


def _spawn_mcp(db: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    """`citedocs mcp` on `db`."""
    return _spawn(_cli("mcp", "--db", str(db)), env)


def _spawn(command: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    """An MCP server talking JSON lines over pipes (stderr dropped)."""
    return subprocess.Popen(
        command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )


BUN = (
    "@oven/bun-linux-x64",
    "1.3.5",
    "n7zhKTSDZS0yOYg5Rq8easZu5Y/o47sv0c7yGr2ciFdcie9uYV55fZ7QMqhWMGK33ezCSikh5EDkUMCIvfWpjA==",
)
QMD = "@tobilu/qmd@2.8.3"


def install_qmd(folder: Path) -> Path:
    """bun (checked against its pinned sha512) and qmd in `folder`; the bun binary's path."""
    import base64
    import hashlib
    import tarfile

    folder.mkdir(parents=True, exist_ok=True)
    name, version, sha512 = BUN
    packed = subprocess.run(
        ["npm", "pack", f"{name}@{version}", "--silent"],
        cwd=folder,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    ).stdout.split()[-1]
    tarball = folder / packed
    if base64.b64encode(hashlib.sha512(tarball.read_bytes()).digest()).decode() != sha512:
        raise RuntimeError(f"{tarball} is not the pinned {name} {version}")
    with tarfile.open(tarball) as archive:
        archive.extractall(folder / "bun", filter="data")
    bun = folder / "bun" / "package" / "bin" / "bun"
    bun.chmod(0o755)
    (folder / "package.json").write_text('{"name": "qmd-peer", "private": true}\n', encoding="utf-8")
    subprocess.run([str(bun), "add", QMD, "--ignore-scripts"], cwd=folder, check=True, timeout=600)
    return bun


def _qmd_setup(install: Path, bun: str, home: Path) -> tuple[list[str], dict[str, str]]:
    """qmd's command and environment (its index and settings under `home`), its collection of the samples made."""
    entry = install / "node_modules" / "@tobilu" / "qmd" / "dist" / "cli" / "qmd.js"
    env = {
        **os.environ,
        "HOME": str(home / "qmd"),
        "XDG_CACHE_HOME": str(home / "qmd" / "cache"),
        "XDG_CONFIG_HOME": str(home / "qmd" / "config"),
    }
    command = [bun, str(entry)]
    subprocess.run(
        [*command, "collection", "add", str(SAMPLES), "--name", "samples"],
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    found = subprocess.run([*command, "search", QUERY], env=env, capture_output=True, text=True, timeout=60)
    if "faq.md" not in found.stdout:
        raise RuntimeError(
            f"qmd did not find {QUERY!r} in the samples: {found.stdout[:300]}{found.stderr[:300]}"
        )
    return command, env


SEARCH_CALL = {"name": "search", "arguments": {"query": QUERY}}
# qmd at its best: keyword (lex) only, no LLM reranking (which loads a model; none can be fetched here)
QMD_CALL = {"name": "query", "arguments": {"searches": [{"type": "lex", "query": QUERY}], "rerank": False}}


def mcp_tools_list(db: Path, env: dict[str, str]) -> tuple[float, float, float, float]:
    """`citedocs mcp` from spawn to tools/list and to its first `search` answered (`mcp_first_search`)."""
    return mcp_first_search(lambda: _spawn_mcp(db, env), SEARCH_CALL)


def mcp_first_search(
    spawn: Callable[[], subprocess.Popen[str]], tool: dict[str, object]
) -> tuple[float, float, float, float]:
    """Spawn an MCP server, send it initialize + initialized + tools/list; once tools/list is answered,
    call `tool`, as an agent does. Seconds from spawn to each of the two replies, the CPU seconds the process
    had used when the search answer arrived (what the wait costs, free of the load's noise), and the CPU
    seconds it used in all (it exits when its input closes, after what the search started, a model load)."""
    messages = [*HANDSHAKE, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]
    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": tool}
    cpu, started = _children_cpu(), time.perf_counter()
    proc = spawn()
    assert proc.stdin is not None and proc.stdout is not None
    for message in messages:
        proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()
    listed = called = answer_cpu = 0.0
    try:
        for line in proc.stdout:
            reply = json.loads(line)
            if reply.get("id") == 2:
                listed = time.perf_counter() - started
                proc.stdin.write(json.dumps(call) + "\n")
                proc.stdin.flush()
            elif reply.get("id") == 3:
                called = time.perf_counter() - started
                answer_cpu = _process_cpu(proc.pid)
                if "error" in reply or reply["result"].get("isError"):
                    raise RuntimeError(f"the search tool failed: {line[:300]}")
                if "faq.md" not in line:
                    raise RuntimeError(f"the search did not find faq.md: {line[:300]}")
                break
        else:
            raise RuntimeError(f"{proc.args!r} closed without answering tools/list and search")
    finally:
        proc.stdin.close()
        proc.wait(30)
    return listed, called, answer_cpu, _children_cpu() - cpu


IDLE_S = 2.5


def mcp_idle_then_sdk_tool(db: Path, env: dict[str, str]) -> float:
    """Spawn `citedocs mcp`, do the handshake, idle IDLE_S (an agent thinking before its first tool call),
    then call `list_doc_sources`, a tool only the MCP SDK serves: seconds from the call to its answer."""
    proc = _spawn_mcp(db, env)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for message in HANDSHAKE:
            proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()
        proc.stdout.readline()
        time.sleep(IDLE_S)
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "list_doc_sources", "arguments": {}},
        }
        started = time.perf_counter()
        proc.stdin.write(json.dumps(call) + "\n")
        proc.stdin.flush()
        reply = json.loads(proc.stdout.readline())
        if reply.get("id") != 2 or "error" in reply:
            raise RuntimeError(f"list_doc_sources failed: {reply}")
        return time.perf_counter() - started
    finally:
        proc.stdin.close()
        proc.wait(30)


def start_server(db: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        _cli("serve", "--port", "0", "--db", str(db)),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if "serving http" in line:
            return proc
    raise RuntimeError("citedocs serve did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--before-src", type=Path, help="src folder of another checkout, timed alongside")
    parser.add_argument("--qmd", type=Path, help="folder holding an install of @tobilu/qmd, timed alongside")
    parser.add_argument("--bun", help="the bun that runs qmd (default: the one --install-qmd put in DIR)")
    parser.add_argument(
        "--install-qmd", type=Path, metavar="DIR", help="install bun and qmd in DIR, then stop"
    )
    args = parser.parse_args()
    if args.install_qmd:
        print(f"bun at {install_qmd(args.install_qmd)}; now: --qmd {args.install_qmd}")
        return
    print_header("Start-up: one-off CLI search, and MCP spawn -> tools/list -> first search")
    versions = {"now": REPO / "src", **({"before": args.before_src} if args.before_src else {})}
    results: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="citedocs-startup-") as tmp:
        home = Path(tmp)
        dbs = {}
        for name, src in versions.items():
            dbs[name] = home / f"{name}.sqlite3"
            subprocess.run(
                _cli("add", str(SAMPLES), "--db", str(dbs[name])),
                env=_env(src, home),
                check=True,
                capture_output=True,
                timeout=600,
            )
            wait = _cli(
                "reindex", "--db", str(dbs[name])
            )  # embeddings done before timing (`add` may return first)
            subprocess.run(wait, env=_env(src, home), check=True, capture_output=True, timeout=600)
        bun = args.bun or (str(args.qmd / "bun" / "package" / "bin" / "bun") if args.qmd else "bun")
        qmd = _qmd_setup(args.qmd, bun, home) if args.qmd else None
        for _ in range(args.runs):
            if qmd is not None:
                command, env = qmd
                wall, cpu = timed([*command, "search", QUERY], env)
                results.setdefault("qmd: search, no server", []).append(wall)
                results.setdefault("qmd: search, no server (CPU)", []).append(cpu)
                listed, called, answer_cpu, cpu = mcp_first_search(
                    lambda command=command, env=env: _spawn([*command, "mcp"], env), QMD_CALL
                )
                results.setdefault("qmd: mcp spawn -> tools/list", []).append(listed)
                results.setdefault("qmd: mcp spawn -> first search answered", []).append(called)
                results.setdefault("qmd: mcp CPU to first search answered", []).append(answer_cpu)
            for name, src in versions.items():
                env, db = _env(src, home), str(dbs[name])
                wall, cpu = timed(_cli("search", QUERY, "--db", db), env)
                results.setdefault(f"{name}: search, no server", []).append(wall)
                results.setdefault(f"{name}: search, no server (CPU)", []).append(cpu)
                wall, cpu = timed(_cli("search", QUERY, "--mode", "keyword", "--db", db), env)
                results.setdefault(f"{name}: search --mode keyword, no server", []).append(wall)
                listed, called, answer_cpu, cpu = mcp_tools_list(dbs[name], env)
                results.setdefault(f"{name}: mcp spawn -> tools/list", []).append(listed)
                results.setdefault(f"{name}: mcp spawn -> first search answered", []).append(called)
                results.setdefault(f"{name}: mcp CPU to first search answered", []).append(answer_cpu)
                results.setdefault(f"{name}: mcp process (CPU)", []).append(cpu)
                results.setdefault(
                    f"{name}: mcp handshake, {IDLE_S} s idle, SDK-only tool answered", []
                ).append(mcp_idle_then_sdk_tool(dbs[name], env))
        for name, src in list(versions.items())[:1]:  # code before the fast path never talks to a server
            env, db = _env(src, home), str(dbs[name])
            server = start_server(dbs[name], env)
            try:
                timed(_cli("search", QUERY, "--db", db), env)  # the server loads its model on the first query
                for _ in range(args.runs):
                    results.setdefault(f"{name}: search, server running", []).append(
                        timed(_cli("search", QUERY, "--db", db), env)[0]
                    )
            finally:
                server.terminate()
                server.wait(30)
    print("| what | median s | min s | max s | runs |")
    print("|---|---|---|---|---|")
    for what, values in results.items():
        print(
            f"| {what} | {statistics.median(values):.2f} | {min(values):.2f} | {max(values):.2f} | {len(values)} |"
        )


if __name__ == "__main__":
    main()
