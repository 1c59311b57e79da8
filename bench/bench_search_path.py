"""What a user's search costs end to end, against bm25s at its best, on SciFact 1x and 10x (keyword).

    nice -n 10 .venv/bin/python bench/bench_search_path.py [--scales 1,10] [--cache /tmp/citedocs-kw-bench]
        [--http-requests 300] [--skip-http] [--skip-reopen] [--hybrid] [--hybrid-scales 1,10]

The indexes are bench_keyword_scale's (built into --cache on first use). One process, interleaved query by
query; the machine may be shared, so the library figures are CPU time (time.process_time) per query.

- library: `Citedocs.search(query)` with the front ends' defaults (k 5, `distinct=True`, as HTTP, MCP and the
  CLI call it) and without `distinct`, against bm25s (k1 1.2, b 0.75) over the very same FTS5 tokens, asked
  in-thread (`n_threads=0`, its best for one query) for the same 5 and given the same analysed query terms
  (an identifier is searched whole when bm25s's own vocabulary holds it, as ours asks its index: until
  2026-12-06 the peer asked the SQLite database, 60 us of each of its queries).
- http: `citedocs serve` on the index against bm25s served by the same stack (citedocs.httpd: uvicorn, h11,
  TCP_NODELAY) and a FastAPI route that runs it in a worker thread as ours does; one kept-alive client each,
  requests interleaved; wall P50/P95 and the server process's CPU per request (/proc/PID/stat). `/healthz`
  P50 on the same connection. Ours is served without a model (an unreachable LLM endpoint): a search uses
  none, and starting a local one loaded the machine through the measurement.
- hybrid (`--hybrid`): `citedocs serve --folder examples/sample-docs` with the default (packaged) embedder, once
  every chunk has a vector: warm hybrid `/search` P50 and server CPU per request (query embedding, vector
  scoring on one BLAS thread, BM25, fusion). The corpus is small: this is the fixed cost of a hybrid query.
- hybrid over SciFact (`--hybrid-scales 1,10`): the index with every passage embedded by the default embedder
  (made once in --cache: `scifact-x1-hybrid.db`), served by `citedocs serve`; distinct questions, hybrid and
  keyword requests interleaved: wall P50/P95 and server CPU per request of each.
- reopen: a new process opens the index and runs one keyword search: seconds from open to the answer, with
  the keyword index saved beside the database (`index.sqlite3.keyword`) and without it (a build).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from _env import SHARED_DATA, pct, print_header

REPO = Path(__file__).resolve().parents[1]


def bm25s_over(store: Any) -> tuple[Any, list[int], list[str]]:
    import bm25s

    rowids: list[int] = []
    texts: list[str] = []
    corpus: list[list[str]] = []
    with store.keyword_snapshot() as (_, rows):
        for rowid, _src, _fmt, heading, body in rows:
            rowids.append(rowid)
            corpus.append(store.keyword_terms(heading or "") + store.keyword_terms(body or ""))
    for chunk in store.chunks_by_rowid(rowids).values():
        texts.append(chunk.text)
    retriever = bm25s.BM25(k1=1.2, b=0.75)
    retriever.index(corpus, show_progress=False)
    return retriever, rowids, texts


def peer_search(store: Any, retriever: Any, query: str, k: int = 5) -> list[int]:
    from citedocs.search.keyword import effective_terms

    vocab = retriever.vocab_dict

    def known(wholes: Any) -> dict[str, int]:  # its own vocabulary says which identifiers it holds whole
        parts = {w: store.keyword_terms(w) for w in wholes}
        return {w: int(len(p) == 1 and p[0] in vocab) for w, p in parts.items()}

    terms = effective_terms(store, query, known)
    tokens = [t for term in terms for t in store.keyword_terms(term) if t in vocab]
    if not tokens:
        return []
    docs, _ = retriever.retrieve([tokens], k=k, show_progress=False, n_threads=0)
    return [int(i) for i in docs[0]]


@contextlib.contextmanager
def keyword_app(db: Path | str) -> Iterator[Any]:
    """`Citedocs` on `db` without an embedder, its in-memory keyword index loaded or built (the studies' too)."""
    from citedocs.service import Citedocs
    from citedocs.settings import Settings

    app = Citedocs(Settings(db=str(db), embedder="none", _env_file=None))  # type: ignore[call-arg]
    try:
        assert app.engine.keyword.wait(300)
        yield app
    finally:
        app.close()


def library(db: Path, queries: list[str]) -> dict[str, Any]:
    with keyword_app(db) as app:
        retriever, _, _ = bm25s_over(app.store)
        warm, timed = queries[:50], queries[50:]
        for q in warm:
            app.search(q, distinct=True)
            peer_search(app.store, retriever, q)
        cpu: dict[str, list[float]] = {"front_end_defaults": [], "plain": [], "bm25s": []}
        calls = {
            "front_end_defaults": lambda q: app.search(q, distinct=True),
            "plain": lambda q: app.search(q),
            "bm25s": lambda q: peer_search(app.store, retriever, q),
        }
        for q in timed:
            for name, call in calls.items():
                t0 = time.process_time()
                call(q)
                cpu[name].append((time.process_time() - t0) * 1000)
    out: dict[str, Any] = {f"{n}_cpu_ms_mean": round(statistics.mean(v), 3) for n, v in cpu.items()}
    out |= {f"{n}_cpu_ms_p50": round(statistics.median(v), 3) for n, v in cpu.items()}
    out["defaults/bm25s_mean"] = round(out["front_end_defaults_cpu_ms_mean"] / out["bm25s_cpu_ms_mean"], 2)
    out["queries"] = len(timed)
    return out


PEER_APP = """
import sys, anyio
sys.path.insert(0, {bench!r})
from fastapi import FastAPI
from pydantic import BaseModel
from bench_search_path import bm25s_over, peer_search
from citedocs.httpd import bind, serve
from citedocs.settings import Settings
from citedocs.store import SQLiteStore

store = SQLiteStore({db!r})
retriever, rowids, texts = bm25s_over(store)
app = FastAPI()

class Body(BaseModel):
    query: str
    k: int = 5

@app.post("/search")
async def search(body: Body) -> dict:
    found = await anyio.to_thread.run_sync(lambda: peer_search(store, retriever, body.query, body.k))
    return {{"hits": [{{"chunk": rowids[i], "text": texts[i][:240]}} for i in found]}}

sock = bind("127.0.0.1", 0)
serve(app, sock, Settings(_env_file=None), lambda: print(f"serving http://127.0.0.1:{{sock.getsockname()[1]}}/", flush=True))
"""


def _start(command: list[str], env: dict[str, str], log: Path) -> tuple[subprocess.Popen[bytes], int]:
    with log.open("w", encoding="utf-8") as out:
        proc = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if found := re.search(r"serving http://127\.0\.0\.1:(\d+)/", log.read_text(encoding="utf-8")):
            return proc, int(found.group(1))
        assert proc.poll() is None, log.read_text(encoding="utf-8")
        time.sleep(0.1)
    raise AssertionError(log.read_text(encoding="utf-8"))


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def http(db: Path, queries: list[str], requests: int, tmp: Path, warmup_s: float) -> dict[str, Any]:
    import httpx

    env = {
        **os.environ,
        "CITEDOCS_DB": str(db),
        "CITEDOCS_EMBEDDER": "none",
        "CITEDOCS_ENV_FILE": "",
        "CITEDOCS_WATCH": "false",
        # no model: a search needs none, and a local one read into memory (or a llama.cpp compile at nice 19)
        # loaded the machine through the 1x measurement, whose warm-up is 5 s; nothing listens on port 9
        "CITEDOCS_LLM_BASE_URL": "http://127.0.0.1:9/v1",
        "CITEDOCS_LLM_BACKGROUND_BUILD": "off",
    }
    peer_script = tmp / "peer.py"
    peer_script.write_text(PEER_APP.format(bench=str(Path(__file__).parent), db=str(db)), encoding="utf-8")
    ours, our_port = _start([sys.executable, "-m", "citedocs", "serve", "--port", "0"], env, tmp / "ours.log")
    peer, peer_port = _start([sys.executable, str(peer_script)], env, tmp / "peer.log")
    try:
        clients = {
            "citedocs": httpx.Client(base_url=f"http://127.0.0.1:{our_port}", timeout=120),
            "bm25s": httpx.Client(base_url=f"http://127.0.0.1:{peer_port}", timeout=120),
        }
        pids = {"citedocs": ours.pid, "bm25s": peer.pid}
        # the server loads its keyword index (saved beside the database by the reopen step) at its first
        # search, or builds it in the background: warm up, then give a build time to land
        clients["citedocs"].post("/search", json={"query": queries[0]}).raise_for_status()
        time.sleep(warmup_s)
        for q in queries[:30]:
            for client in clients.values():
                client.post("/search", json={"query": q}).raise_for_status()
        wall: dict[str, list[float]] = {name: [] for name in clients}
        cpu = dict.fromkeys(clients, 0.0)
        for n in range(requests):
            q = queries[30 + n % (len(queries) - 30)]
            for name, client in clients.items():
                c0 = _cpu_s(pids[name])
                t0 = time.perf_counter()
                client.post("/search", json={"query": q}).raise_for_status()
                wall[name].append((time.perf_counter() - t0) * 1000)
                cpu[name] += _cpu_s(pids[name]) - c0
        health = []
        for _ in range(100):
            t0 = time.perf_counter()
            clients["citedocs"].get("/healthz").raise_for_status()
            health.append((time.perf_counter() - t0) * 1000)
    finally:
        for proc in (ours, peer):
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
    out: dict[str, Any] = {}
    for name in clients:
        out[f"{name}_p50_ms"] = round(statistics.median(wall[name]), 2)
        out[f"{name}_p95_ms"] = round(pct(wall[name], 95), 2)
        out[f"{name}_server_cpu_ms"] = round(cpu[name] * 1000 / requests, 2)
    out["p50_ratio"] = round(out["citedocs_p50_ms"] / out["bm25s_p50_ms"], 2)
    out["server_cpu_ratio"] = round(out["citedocs_server_cpu_ms"] / max(out["bm25s_server_cpu_ms"], 1e-9), 2)
    out["healthz_p50_ms"] = round(statistics.median(health), 2)
    out["requests"] = requests
    return out


HYBRID_QUERIES = [
    "how do I rotate the logs",
    "configure the port",
    "backup and restore",
    "install on linux",
    "token limits",
    "upgrade the server",
    "reset a password",
    "where are the logs kept",
]


def hybrid(requests: int, tmp: Path) -> dict[str, Any]:
    import httpx

    env = {
        **os.environ,
        "CITEDOCS_DB": str(tmp / "index.sqlite3"),
        "CITEDOCS_ENV_FILE": "",
        "XDG_DATA_HOME": str(tmp / "data"),
    }
    env.pop("CITEDOCS_EMBEDDER", None)
    command = [
        sys.executable,
        "-m",
        "citedocs",
        "serve",
        "--port",
        "0",
        "--folder",
        str(REPO / "examples" / "sample-docs"),
    ]
    proc, port = _start(command, env, tmp / "serve.log")
    try:
        client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=300)
        deadline = time.monotonic() + 600
        while True:  # until the model is loaded and every chunk has a vector
            body = client.post("/search", json={"query": HYBRID_QUERIES[0]}).json()
            if body["mode"] == "hybrid" and not body.get("note"):
                break
            assert time.monotonic() < deadline, body
            time.sleep(2)
        for q in HYBRID_QUERIES:
            client.post("/search", json={"query": q}).raise_for_status()
        wall = []
        c0 = _cpu_s(proc.pid)
        for n in range(requests):
            t0 = time.perf_counter()
            body = client.post(
                "/search", json={"query": f"{HYBRID_QUERIES[n % len(HYBRID_QUERIES)]} {n}"}
            ).json()
            wall.append((time.perf_counter() - t0) * 1000)
            assert body["mode"] == "hybrid", body
        cpu = (_cpu_s(proc.pid) - c0) * 1000 / requests
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    return {
        "hybrid_p50_ms": round(statistics.median(wall), 2),
        "hybrid_p95_ms": round(pct(wall, 95), 2),
        "server_cpu_ms": round(cpu, 2),
        "requests": requests,
    }


def hybrid_scifact(db: Path, queries: list[str], requests: int, tmp: Path) -> dict[str, Any]:
    """Hybrid `/search` over a SciFact index with every passage embedded (the default embedder; the embedded copy
    of the keyword index is made once and kept in the cache): distinct questions, so every request embeds its
    query; keyword requests interleaved on the same server for the hybrid part's cost."""
    import httpx

    hybrid_db = db.with_name(db.stem + "-hybrid.db")
    embed_s = None
    if not hybrid_db.exists():
        import shutil

        from citedocs.service import Citedocs
        from citedocs.settings import Settings

        partial = hybrid_db.with_suffix(".partial")
        shutil.copyfile(db, partial)
        started = time.perf_counter()
        app = Citedocs(Settings(db=str(partial), _env_file=None))
        try:
            app.embed()
        finally:
            app.close()
        embed_s = round(time.perf_counter() - started, 1)
        partial.rename(hybrid_db)
    env = {**os.environ, "CITEDOCS_DB": str(hybrid_db), "CITEDOCS_ENV_FILE": "", "XDG_DATA_HOME": str(tmp)}
    env.pop("CITEDOCS_EMBEDDER", None)
    proc, port = _start([sys.executable, "-m", "citedocs", "serve", "--port", "0"], env, tmp / "serve.log")
    try:
        client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=300)
        deadline = time.monotonic() + 600
        while True:  # until the model is loaded
            body = client.post("/search", json={"query": queries[0]}).json()
            if body["mode"] == "hybrid" and not body.get("note"):
                break
            assert time.monotonic() < deadline, body
            time.sleep(2)
        for q in queries[:30]:
            client.post("/search", json={"query": q}).raise_for_status()
        wall: dict[str, list[float]] = {"hybrid": [], "keyword": []}
        cpu = dict.fromkeys(wall, 0.0)
        for n in range(requests):
            q = queries[30 + n % (len(queries) - 30)]
            for mode in wall:
                c0 = _cpu_s(proc.pid)
                t0 = time.perf_counter()
                body = client.post("/search", json={"query": q, "mode": mode}).json()
                wall[mode].append((time.perf_counter() - t0) * 1000)
                cpu[mode] += _cpu_s(proc.pid) - c0
                assert body["mode"] == mode and not body.get("note"), body
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    out: dict[str, Any] = {"passages": _count_chunks(hybrid_db), "embed_s": embed_s, "requests": requests}
    for mode, values in wall.items():
        out[f"{mode}_p50_ms"] = round(statistics.median(values), 2)
        out[f"{mode}_p95_ms"] = round(pct(values, 95), 2)
        out[f"{mode}_server_cpu_ms"] = round(cpu[mode] * 1000 / requests, 2)
    return out


def _count_chunks(db: Path) -> int:
    import sqlite3

    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        return int(conn.execute("SELECT count(*) FROM chunks").fetchone()[0])


REOPEN = """
import sys, time
t0 = time.perf_counter()
from citedocs.service import Citedocs
from citedocs.settings import Settings
t1 = time.perf_counter()
app = Citedocs(Settings(db=sys.argv[1], embedder="none", _env_file=None))
result = app.search(sys.argv[2], mode="keyword", distinct=True)
t2 = time.perf_counter()
state = app.engine.keyword.status()["state"]
app.engine.keyword.wait()
t3 = time.perf_counter()
print(round(t1 - t0, 3), round(t2 - t1, 3), round(t3 - t1, 3), state, flush=True)
app.close()
"""


def reopen(db: Path, query: str, runs: int) -> dict[str, Any]:
    """Seconds to import, from opening the index to the first search's answer, and to the keyword index in
    memory; with the saved keyword index and without it (moved aside: a build)."""
    saved = Path(f"{db}.keyword")
    if not saved.exists():  # one build saves it
        subprocess.run([sys.executable, "-c", REOPEN, str(db), query], check=True, capture_output=True)
    aside = Path(f"{saved}.aside")
    times: dict[str, list[list[float]]] = {"saved": [], "built": []}
    states: dict[str, str] = {}
    for _ in range(runs):
        for name in ("saved", "built"):
            if name == "built":
                saved.rename(aside)
            try:
                out = subprocess.run(
                    [sys.executable, "-c", REOPEN, str(db), query], check=True, capture_output=True, text=True
                ).stdout.split()
            finally:
                if name == "built":
                    saved.unlink(missing_ok=True)  # the build saved a new one: keep the first
                    aside.rename(saved)
            times[name].append([float(x) for x in out[:3]])
            states[name] = out[3]
    result: dict[str, Any] = {}
    for name, rows in times.items():
        for i, what in enumerate(("import_s", "open_to_first_answer_s", "open_to_index_in_memory_s")):
            result[f"{name}_{what}_p50"] = round(statistics.median(r[i] for r in rows), 3)
    return result | {"first_answer_from": states, "runs": runs}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--folder", default=str(SHARED_DATA / "scifact"))
    parser.add_argument("--scales", default="1,10")
    parser.add_argument("--cache", default="/tmp/citedocs-kw-bench")
    parser.add_argument("--http-requests", type=int, default=300)
    parser.add_argument("--reopen-runs", type=int, default=3)
    parser.add_argument("--skip-http", action="store_true")
    parser.add_argument("--skip-reopen", action="store_true")
    parser.add_argument("--skip-library", action="store_true")
    parser.add_argument("--hybrid", action="store_true", help="also the hybrid /search figure (sample docs)")
    parser.add_argument(
        "--hybrid-scales",
        default="",
        help="hybrid /search over SciFact at these scales (1,10), every passage embedded",
    )
    args = parser.parse_args()
    from bench_keyword_scale import cached_sqlite

    from citedocs.eval.beir import load_beir

    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    queries = list(load_beir(Path(args.folder)).queries.values())
    print_header("A user's search end to end: citedocs vs bm25s at its best (same run; machine shared)")
    if args.hybrid:
        with tempfile.TemporaryDirectory(prefix="citedocs-hybrid-") as tmp:
            print("hybrid", json.dumps(hybrid(80, Path(tmp))), flush=True)
    for scale in [int(s) for s in args.hybrid_scales.split(",") if s]:
        store, _ = cached_sqlite(cache, Path(args.folder), scale)
        store.close()
        with tempfile.TemporaryDirectory(prefix="citedocs-hybrid-") as tmp:
            result = hybrid_scifact(cache / f"scifact-x{scale}.db", queries, args.http_requests, Path(tmp))
            print(f"{scale}x hybrid", json.dumps(result), flush=True)
    for scale in [int(s) for s in args.scales.split(",") if s]:
        store, _ = cached_sqlite(cache, Path(args.folder), scale)
        store.close()
        db = cache / f"scifact-x{scale}.db"
        if not args.skip_library:
            print(f"{scale}x library", json.dumps(library(db, queries)), flush=True)
        if not args.skip_reopen:
            print(f"{scale}x reopen", json.dumps(reopen(db, queries[0], args.reopen_runs)), flush=True)

        if not args.skip_http:
            with tempfile.TemporaryDirectory(prefix="citedocs-path-") as tmp:
                print(
                    f"{scale}x http",
                    json.dumps(http(db, queries, args.http_requests, Path(tmp), 5.0 * scale)),
                    flush=True,
                )


if __name__ == "__main__":
    main()
