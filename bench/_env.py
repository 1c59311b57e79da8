"""What every benchmark prints first: when, on what, with which software."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import platform
import statistics
import subprocess
from collections.abc import Sequence
from pathlib import Path

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def header() -> dict[str, str]:
    commit = ""
    with contextlib.suppress(OSError):
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            cwd=Path(__file__).parent,
            check=False,
        ).stdout.strip()
    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu_model(),
        "cores": str(os.cpu_count()),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "commit": commit,
    }


def print_header(title: str) -> None:
    print(f"# {title}")
    for key, value in header().items():
        print(f"- {key}: {value}")
    print()


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    idx = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[idx]


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")
