"""The folder watcher on a 10,000-file folder: edit -> keyword-searchable latency, CPU while idle, and bursts
of 5,000 changed files (each must be indexed exactly once).

    nice -n 10 .venv/bin/python bench/bench_watch.py [--files 10000] [--edits 40] [--idle-s 60] [--burst 5000]
    nice -n 10 .venv/bin/python bench/bench_watch.py --polling [--files 10000] [--edits 10] [--idle-s 30]

Keyword-only (CITEDOCS_EMBEDDER=none), SQLite, the watcher's default settings unless given. Index operations
are counted by the store's generation counter, which every document write bumps once (an unchanged file
re-read and found equal is not a write). The reference is what keeping up costs without a watcher: one
`citedocs reindex` (a stat walk of the whole folder) after a single edit.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import shutil
import tempfile
import threading
import time
from pathlib import Path

from _env import median, pct, print_header

from citedocs.service import Citedocs
from citedocs.settings import Settings

WORDS = [
    "install",
    "configure",
    "server",
    "client",
    "request",
    "response",
    "token",
    "stream",
    "index",
    "search",
    "query",
    "cache",
    "timeout",
    "retry",
    "folder",
    "file",
    "page",
    "heading",
    "model",
    "vector",
    "keyword",
    "database",
    "schema",
    "migration",
    "backup",
]


def cpu_seconds() -> float:
    """This process's user + system CPU time, all threads (from /proc, no psutil)."""
    fields = Path("/proc/self/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def note(i: int, marker: str = "") -> str:
    rng = random.Random(i)
    body = " ".join(rng.choice(WORDS) for _ in range(60))
    return f"# Note {i}\n\n{body}\n\n## Details\n\n{body[::-1]} {marker}\n"


def make_folder(root: Path, files: int) -> list[Path]:
    paths = []
    for i in range(files):
        path = root / f"part{i % 100:02}" / f"note{i:05}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(note(i), encoding="utf-8")
        paths.append(path)
    return paths


def wait(check: object, timeout: float = 120.0, step: float = 0.005) -> float:
    started = time.monotonic()
    while not check():  # type: ignore[operator]
        if time.monotonic() - started > timeout:
            raise SystemExit(f"timed out after {timeout} s")
        time.sleep(step)
    return time.monotonic() - started


def start(db: Path, root: Path, **extra: object) -> Citedocs:
    app = Citedocs(Settings(db=str(db), embedder="none", **extra))  # type: ignore[arg-type]
    if not app.store.list_sources("folder"):
        app.add_folder(root)
    app.start_watching(catch_up=False)
    wait(lambda: app.watch_status()[0]["state"] in ("watching", "polling"), 60, 0.05)
    return app


def hit(app: Citedocs, token: str, path: Path) -> bool:
    hits = app.search(token, mode="keyword", k=3).hits
    return len(hits) == 1 and hits[0].path == str(path)


def burst(app: Citedocs, paths: list[Path], count: int, tag: str) -> dict[str, float]:
    """Rewrite `count` files as fast as possible; time until all are indexed, and count the writes."""
    chosen = paths[:count]
    source = app.store.list_sources("folder")[0]
    before = app.store._generation_now()
    batches = app.watch_status()[0]["changes"]
    started = time.monotonic()
    wanted = {}
    for i, path in enumerate(chosen):
        text = note(i, f"{tag}{i}")
        path.write_text(text, encoding="utf-8")
        wanted[str(path)] = hashlib.sha256(text.encode("utf-8")).hexdigest()
    written = time.monotonic() - started

    def done() -> bool:
        docs = app.store.documents(source.id)
        return all(docs[p].sha256 == sha for p, sha in wanted.items())

    settled = wait(done, 600, 0.1) + written
    time.sleep(3.0)  # anything indexed twice would show up now
    status = app.watch_status()[0]
    return {
        "seconds": settled,
        "write_seconds": written,
        "writes": app.store._generation_now() - before,
        "batches": status["changes"] - batches,
        "rescan": bool(status["last_change"]["rescan"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--edits", type=int, default=40)
    parser.add_argument("--idle-s", type=float, default=60.0)
    parser.add_argument("--burst", type=int, default=5_000)
    parser.add_argument(
        "--polling", action="store_true", help="idle CPU and latency with CITEDOCS_WATCH_POLLING=on"
    )
    args = parser.parse_args()
    print_header("bench_watch: folder watcher latency, idle CPU and bursts")
    defaults = Settings(db=":memory:")
    events = f"polling every {defaults.watch_poll_s:g} s" if args.polling else "native events (inotify)"
    print(
        f"settings: watch_debounce_s={defaults.watch_debounce_s:g}, watch_max_events={defaults.watch_max_events}, "
        f"{events}; keyword-only; the machine is shared with other jobs\n"
    )
    tmp = Path(tempfile.mkdtemp(prefix="bench-watch-"))
    try:
        root, db = tmp / "docs", tmp / "index.sqlite3"
        root.mkdir()
        started = time.perf_counter()
        paths = make_folder(root, args.files)
        made = time.perf_counter() - started
        app = Citedocs(Settings(db=str(db), embedder="none"))
        app.add_folder(root)
        started = time.perf_counter()
        app.index()
        indexed = time.perf_counter() - started
        print(
            f"folder: {args.files} markdown files in 100 folders (written in {made:.1f} s), "
            f"first index {indexed:.1f} s"
        )
        paths[0].write_text(note(0, "reference"), encoding="utf-8")
        started = time.perf_counter()
        app.index()
        print(
            f"reference, no watcher: `reindex` after one edit (stat walk of {args.files} files): "
            f"{(time.perf_counter() - started) * 1000:.0f} ms\n"
        )
        app.close()

        if args.polling:
            app = start(db, root, watch_polling="on")
            wait(lambda: app.watch_status()[0]["state"] == "polling", 60, 0.05)
        else:
            app = start(db, root)
        threads = threading.active_count()
        time.sleep(1.0)
        before, t0 = cpu_seconds(), time.monotonic()
        time.sleep(args.idle_s)
        used, wall = cpu_seconds() - before, time.monotonic() - t0
        print(
            f"idle: {used:.2f} CPU s over {wall:.0f} s = {100 * used / wall:.2f}% of one core "
            f"({threads} threads in the process)"
        )

        rng = random.Random(7)
        latencies = []
        for n in range(args.edits):
            path = rng.choice(paths[args.burst :] or paths)
            token = f"zqedit{n}x"
            started = time.monotonic()
            path.write_text(note(n, token), encoding="utf-8")
            latencies.append(wait(lambda token=token, path=path: hit(app, token, path)) * 1000)
            time.sleep(0.05)
        print(
            f"edit -> keyword-searchable, {args.edits} edits: P50 {median(latencies):.0f} ms, "
            f"P95 {pct(latencies, 95):.0f} ms, max {max(latencies):.0f} ms"
        )
        if args.polling:
            app.close()
            return

        result = burst(app, paths, args.burst, "zqburst")
        print(
            f"burst of {args.burst} (cap {defaults.watch_max_events} paths per batch): all indexed "
            f"{result['seconds']:.1f} s after the first write (writing took {result['write_seconds']:.1f} s); "
            f"{result['writes']} document writes, {result['batches']} batches, last a rescan: "
            f"{result['rescan']}"
        )
        app.close()

        app = start(db, root, watch_max_events=args.files)
        result = burst(app, paths, args.burst, "zqpaths")
        print(
            f"burst of {args.burst} (cap raised to {args.files}: changed paths only): all indexed "
            f"{result['seconds']:.1f} s after the first write (writing took {result['write_seconds']:.1f} s); "
            f"{result['writes']} document writes, {result['batches']} batches, last a rescan: "
            f"{result['rescan']}"
        )
        app.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
