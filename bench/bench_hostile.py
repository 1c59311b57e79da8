"""A hostile folder, indexed as a user would: a 45 MB one-line file, a docx bomb, a FIFO and 200 notes.

    .venv/bin/python bench/bench_hostile.py [--sizes 4,16,45]

Prints the `citedocs add` outcome with its peak RSS and wall time (`/usr/bin/time -v`, apt-get install time),
then parse + chunk seconds of one-line text files of each size in MB (chunking was quadratic in a line's
length before issue 14: 16 MB took 30 s, 45 MB did not finish).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _env import print_header

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from citedocs.chunker import chunk_segments  # noqa: E402
from citedocs.parsers import parse_file  # noqa: E402
from test_hostile_files import docx_bomb  # noqa: E402 (the test's own bomb, so both measure the same file)

WORDS = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor "


def one_line(path: Path, megabytes: float) -> None:
    size = int(megabytes * 1024 * 1024)
    with path.open("w") as out:
        block = WORDS * 1000
        for _ in range(size // len(block)):
            out.write(block)


def hostile_folder(root: Path) -> Path:
    folder = root / "hostile"
    folder.mkdir()
    docx_bomb(folder / "bomb.docx")
    os.mkfifo(folder / "pipe.md")
    one_line(folder / "oneline.txt", 45)
    for i in range(200):
        (folder / f"note{i:03}.md").write_text(
            f"# Note {i}\n\nThis is note number {i} about topic {i % 17}.\n"
        )
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="4,16,45")
    args = parser.parse_args()
    print_header("Hostile folder: 45 MB line, docx bomb, FIFO, 200 notes")
    with tempfile.TemporaryDirectory(prefix="citedocs-hostile-") as tmp:
        root = Path(tmp)
        folder = hostile_folder(root)
        env = {**os.environ, "CITEDOCS_EMBEDDER": "none", "CITEDOCS_DB": str(root / "index.sqlite3")}
        proc = subprocess.run(
            ["/usr/bin/time", "-v", sys.executable, "-m", "citedocs", "add", str(folder)],
            env=env,
            capture_output=True,
            text=True,
            timeout=1800,
            check=False,
        )
        rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
        wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", proc.stderr)
        print(
            f"`citedocs add` exit {proc.returncode}; peak RSS {int(rss.group(1)) / 1024:.0f} MB; wall {wall.group(1)}"
            if rss and wall
            else proc.stderr[-2000:]
        )
        for line in proc.stdout.splitlines():
            print(f"    {line}")
        print()
        print("| one line of | parse s | chunk s | chunks |")
        print("|---|---|---|---|")
        for size in (float(s) for s in args.sizes.split(",")):
            path = root / f"line-{size:g}.txt"
            one_line(path, size)
            t0 = time.perf_counter()
            parsed = parse_file(path, max_bytes=None)
            t1 = time.perf_counter()
            chunks = chunk_segments(parsed.segments)
            t2 = time.perf_counter()
            print(f"| {size:g} MB | {t1 - t0:.2f} | {t2 - t1:.2f} | {len(chunks)} |")
            path.unlink()


if __name__ == "__main__":
    main()
