"""`citedocs add FOLDER`, keyword only (`CITEDOCS_EMBEDDER=none`), a fresh process per run, interleaved.

    nice -n 5 .venv/bin/python bench/bench_folder_add.py [--runs 5] [--folder DIR | --beir ../shared/data/scifact]
        [--baseline-src /tmp/main/src]   # the same command with the package there, alternating ("baseline")

`--beir` writes a BEIR corpus as one Markdown file per document (`# title`, then the text) into a temporary
folder first: many small files, the case where the folder indexer's commits cost the most. The figure is the
whole command's CPU time (user + system of the child, imports included) and its wall time; medians, and the
load average before and after.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _env import SHARED_DATA, print_header

from citedocs.eval.beir import load_beir


def write_beir_folder(beir: Path, into: Path) -> Path:
    for doc_id, (title, text) in load_beir(beir).corpus.items():
        (into / f"{doc_id}.md").write_text(f"# {title}\n\n{text}\n", encoding="utf-8")
    return into


def add_once(folder: Path, src: Path) -> tuple[float, float]:
    """(CPU s, wall s) of one `citedocs add` into a new index, with the package at `src`."""
    with tempfile.TemporaryDirectory(prefix="citedocs-add-") as tmp:
        env = dict(os.environ, PYTHONPATH=str(src), CITEDOCS_EMBEDDER="none", CITEDOCS_DB=f"{tmp}/index.db")
        env["HOME"] = tmp
        before, wall = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "citedocs", "add", str(folder), "--json"],
            env=env,
            check=True,
            capture_output=True,
        )
        wall = time.perf_counter() - wall
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--folder", type=Path, default=SHARED_DATA / "claude-docs-qa" / "docs")
    parser.add_argument("--beir", type=Path, help="a BEIR folder to write out as Markdown files and add")
    parser.add_argument("--baseline-src", type=Path, help="a citedocs package folder to run as 'baseline'")
    args = parser.parse_args()
    contenders = {"citedocs": Path(__file__).resolve().parents[1] / "src"}
    if args.baseline_src:
        contenders["baseline"] = args.baseline_src.resolve()
    with tempfile.TemporaryDirectory(prefix="citedocs-addsrc-") as tmp:
        folder = write_beir_folder(args.beir, Path(tmp)) if args.beir else args.folder
        files = sum(1 for p in folder.rglob("*") if p.is_file())
        print_header(f"`citedocs add` (keyword only) of {files} files, {args.runs} interleaved runs")
        print("load average before:", " ".join(f"{x:.2f}" for x in os.getloadavg()))
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in contenders}
        for n in range(args.runs):
            for name, src in contenders.items():
                runs[name].append(add_once(folder, src))
                print(f"run {n + 1} {name}: cpu {runs[name][-1][0]:.3f} s, wall {runs[name][-1][1]:.3f} s")
    medians = {
        name: [statistics.median(r[i] for r in results) for i in (0, 1)] for name, results in runs.items()
    }
    for name, (cpu, wall) in medians.items():
        print(f"median {name}: cpu {cpu:.3f} s, wall {wall:.3f} s")
    if "baseline" in medians:
        print(f"citedocs / baseline CPU: {medians['citedocs'][0] / medians['baseline'][0]:.2f}")
    print("load average after:", " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
