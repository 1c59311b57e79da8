"""The web page's own cost: from opening the page to the first search result on screen, in real Chromium.

    .venv/bin/python bench/bench_web.py [--runs 7] [--embedder auto|none] [--chromium /usr/bin/chromium]
                                        [--width 1280] [--src SRC_DIR]

Starts `citedocs serve --folder examples/sample-docs` on a fresh index (in a temporary folder), waits until
indexing and embedding are done, then for each run opens the page in a fresh browser context (no cache) and
types a query. Per run it records, on the page's own clock (performance marks): the first contentful paint;
the `load` event (modules included); the page usable (its first /sources answer filled the filters); typing to the first result rendered
(includes the page's 180 ms debounce); the `/search` round trip as the page measured it; and usable plus
typing to result. Keyword and hybrid runs are interleaved. Medians (P95). `--src` serves another checkout's
package (e.g. /work/main/src, to compare against a baseline on the same machine); `--width 390` is a phone.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
from _env import median, pct, print_header

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "examples" / "sample-docs"
QUERIES = [
    "rotate the logs",
    "metrics port",
    "port already in use",
    "reload the config",
    "agent cannot connect",
]
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def serve(home: Path, embedder: str, src: Path) -> Iterator[str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITEDOCS_")}
    env.update(
        {
            "XDG_DATA_HOME": str(home / "data"),
            "XDG_CONFIG_HOME": str(home / "config"),
            "CITEDOCS_ENV_FILE": "",
            "CITEDOCS_EMBEDDER": embedder,
            "PYTHONPATH": str(src),
        }
    )
    command = [
        sys.executable,
        "-m",
        "citedocs",
        "serve",
        "--folder",
        str(SAMPLES),
        "--db",
        str(home / "index.sqlite3"),
        "--port",
        str(port),
    ]
    log = (home / "serve.log").open("w", encoding="utf-8")
    proc = subprocess.Popen(command, env=env, stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while True:
            with contextlib.suppress(httpx.HTTPError):
                status = httpx.get(url + "/status", timeout=5).json()
                embedded = status["embedder"]["vectors"] >= status["embedder"]["chunks"] > 0
                if not status["active"] and status["totals"]["indexed"] and (embedder == "none" or embedded):
                    break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the server did not get ready: {(home / 'serve.log').read_text('utf-8')}")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()


def one_run(browser: Any, url: str, query: str, mode: str, width: int = 1280) -> dict[str, float]:
    """Timings from the page's own clock (performance marks), so the driver's round trips are not counted.
    Expressions are functions: the page's Content-Security-Policy forbids evaluating strings."""
    context = browser.new_context(viewport={"width": width, "height": 800})
    page = context.new_page()
    try:
        page.goto(url + "/#search", wait_until="load")
        page.wait_for_function("() => performance.getEntriesByName('citedocs:ready').length > 0")
        page.select_option("#search-mode", mode)
        typed = page.evaluate(
            """(q) => { performance.clearMarks('citedocs:results'); const box = document.querySelector('#search-q');
                       box.value = q; const t = performance.now(); box.dispatchEvent(new Event('input')); return t; }""",
            query,
        )
        try:
            page.wait_for_function(
                "() => document.querySelectorAll('#results .hit').length > 0", timeout=20_000
            )
        except Exception:
            raise SystemExit(
                f"no result for {query!r} ({mode}): {page.inner_text('#search-note')!r}"
            ) from None
        marks = page.evaluate(
            """() => ({ paint: performance.getEntriesByName('first-contentful-paint')[0].startTime,
                       ready: performance.getEntriesByName('citedocs:ready')[0].startTime,
                       load: performance.getEntriesByType('navigation')[0].loadEventEnd,
                       shown: performance.getEntriesByName('citedocs:results').at(-1).startTime })"""
        )
        note = page.inner_text("#search-note")
        round_trip = re.search(r"(\d+) ms", note)
        return {
            "paint_ms": marks["paint"],
            "load_ms": marks["load"],
            "ready_ms": marks["ready"],
            "type_to_result_ms": marks["shown"] - typed,
            "search_ms": float(round_trip.group(1)) if round_trip else float("nan"),
            "total_ms": marks["ready"] + marks["shown"] - typed,
        }
    finally:
        context.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--embedder", default="auto", help="auto (hybrid works) or none (keyword only)")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    parser.add_argument("--width", type=int, default=1280, help="viewport width in px (390: a phone)")
    parser.add_argument(
        "--src", type=Path, default=REPO / "src", help="the package to serve (a baseline's src)"
    )
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    print_header("bench_web: the page, from navigation to the first search result (examples/sample-docs)")
    modes = ["keyword", "hybrid"] if args.embedder != "none" else ["keyword"]
    results: dict[str, list[dict[str, float]]] = {mode: [] for mode in modes}
    with (
        tempfile.TemporaryDirectory() as tmp,
        serve(Path(tmp), args.embedder, args.src) as url,
        sync_playwright() as pw,
    ):
        browser = pw.chromium.launch(executable_path=args.chromium, args=LAUNCH_ARGS)
        print(f"- chromium: {browser.version} (headless), viewport {args.width} px, serving {args.src}\n")
        one_run(browser, url, QUERIES[0], modes[0], args.width)  # warm-up run, not counted
        for run in range(args.runs):
            for mode in modes:  # interleaved, so drift on a shared machine hits both alike
                results[mode].append(one_run(browser, url, QUERIES[run % len(QUERIES)], mode, args.width))
        browser.close()
    print(f"runs: {args.runs} per mode, embedder {args.embedder}; medians (P95) in ms")
    print(
        "| mode | first paint | page load event | page usable (filters filled) | typing → first result (incl. 180 ms debounce) "
        "| /search round trip | page usable + typing → result |"
    )
    print("|---|---|---|---|---|---|---|")
    for mode, rows in results.items():
        cells = []
        for key in ("paint_ms", "load_ms", "ready_ms", "type_to_result_ms", "search_ms", "total_ms"):
            values = [r[key] for r in rows]
            cells.append(f"{median(values):.0f} ({pct(values, 95):.0f})")
        print(f"| {mode} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
