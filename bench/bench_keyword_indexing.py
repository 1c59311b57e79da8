"""Keyword-only indexing of SciFact: citedocs' production pipeline against bm25s at its best, interleaved.

    nice -n 5 .venv/bin/python bench/bench_keyword_indexing.py [--runs 5] [--folder ../shared/data/scifact]
        [--baseline-src /tmp/main-src]   # also runs the citedocs package there, interleaved ("baseline")

- citedocs: `citedocs.eval.beir.index_beir` with the embedder off (`CITEDOCS_EMBEDDER=none`), the path
  `citedocs bench beir` and `citedocs add` take: each document chunked, analysed and written to a SQLite file
  (chunks, FTS5, change log), 500 documents a transaction (`citedocs add` commits once per file).
- bm25s: `bm25s.tokenize` (English stopwords, the same Snowball stemmer through PyStemmer) and `BM25.index`,
  in memory, in the calling thread: its fastest way to a searchable index.
- Each run is a fresh process (no analysis cache warm from an earlier run), the two alternating; the figure
  is the CPU time (time.process_time) of the indexing alone, not the imports or reading the corpus, so a
  shared machine inflates it less than wall time; wall time is printed too. Medians of the runs, and the
  load average before and after them.
- `--baseline-src DIR`: the same citedocs run with the package in DIR first on the path (e.g. an older commit's
  `src`, from `git archive COMMIT src | tar -x -C /tmp/main`), a third contender in every round.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _env import SHARED_DATA, print_header


def citedocs_run(folder: Path) -> dict[str, float]:
    from citedocs.eval.beir import index_beir, load_beir
    from citedocs.service import Citedocs
    from citedocs.settings import Settings

    data = load_beir(folder)
    with tempfile.TemporaryDirectory(prefix="citedocs-kwidx-") as tmp:
        app = Citedocs(Settings(db=str(Path(tmp) / "index.sqlite3"), embedder="none", _env_file=None))  # type: ignore[call-arg]
        try:
            cpu, wall = time.process_time(), time.perf_counter()
            index_beir(app, data)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            chunks = app.store.counts()["chunks"]
        finally:
            app.close()
    return {"cpu_s": cpu, "wall_s": wall, "docs": len(data.corpus), "chunks": chunks}


def bm25s_run(folder: Path) -> dict[str, float]:
    import bm25s
    import Stemmer

    from citedocs.eval.beir import load_beir

    data = load_beir(folder)
    texts = [f"{t}\n{b}" for t, b in data.corpus.values()]
    stemmer = Stemmer.Stemmer("english")
    cpu, wall = time.process_time(), time.perf_counter()
    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False
    )
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return {"cpu_s": cpu, "wall_s": wall, "docs": len(texts)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--folder", default=str(SHARED_DATA / "scifact"))
    parser.add_argument("--baseline-src", type=Path, help="a citedocs package folder to run as 'baseline'")
    parser.add_argument("--one", choices=["citedocs", "bm25s"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    folder = Path(args.folder)
    if args.one:
        print(json.dumps((citedocs_run if args.one == "citedocs" else bm25s_run)(folder)))
        return
    print_header(f"Keyword-only indexing of {folder.name}: citedocs vs bm25s, {args.runs} interleaved runs")
    print("load average before:", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    runs: dict[str, list[dict[str, float]]] = {"citedocs": [], "bm25s": []}
    if args.baseline_src:
        runs["baseline"] = []
    for n in range(args.runs):
        for name in runs:
            env = dict(os.environ)
            if name == "baseline":
                env["PYTHONPATH"] = os.pathsep.join(
                    [str(args.baseline_src.resolve()), env.get("PYTHONPATH", "")]
                )
            out = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--one",
                    name.replace("baseline", "citedocs"),
                    "--folder",
                    str(folder),
                ],
                capture_output=True,
                text=True,
                check=True,
                env=env,
            ).stdout
            runs[name].append(json.loads(out.strip().splitlines()[-1]))
            print(f"run {n + 1} {name}", json.dumps({k: round(v, 3) for k, v in runs[name][-1].items()}))
    summary: dict[str, float] = {}
    for name, results in runs.items():
        summary[f"{name}_cpu_s"] = round(statistics.median(r["cpu_s"] for r in results), 3)
        summary[f"{name}_wall_s"] = round(statistics.median(r["wall_s"] for r in results), 3)
        summary[f"{name}_docs_per_cpu_s"] = round(results[0]["docs"] / summary[f"{name}_cpu_s"])
    summary["cpu_ratio"] = round(summary["citedocs_cpu_s"] / summary["bm25s_cpu_s"], 2)
    summary["wall_ratio"] = round(summary["citedocs_wall_s"] / summary["bm25s_wall_s"], 2)
    if "baseline" in runs:
        summary["baseline_cpu_ratio"] = round(summary["baseline_cpu_s"] / summary["bm25s_cpu_s"], 2)
        summary["citedocs_vs_baseline_cpu"] = round(summary["citedocs_cpu_s"] / summary["baseline_cpu_s"], 2)
    print("median", json.dumps(summary))
    print("load average after:", " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
