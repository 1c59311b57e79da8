"""Run directories: one evaluation's per-case values, their summary with intervals, and how it was made.

A run directory holds `summary.json` (`{"meta": {...}, "metrics": {name: {"mean", "ci95", "n"}}}`) and
`cases.jsonl` (one `{"id", "metrics": {name: value or null}, "detail": {...}}` a line; null = the metric is
undefined for that case). `meta` records the cases digest, settings, date, hardware and git commit, so a
number can be traced to what produced it.
"""

from __future__ import annotations

import json
import math
import os
import platform
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from citedocs.errors import InputError, NotFoundError
from citedocs.eval.bootstrap import columns, summarize
from citedocs.eval.cases import Case, cases_digest

__all__ = ["Run", "read_jsonl", "read_run", "run_meta", "write_pairs", "write_run"]

_SECRET_ENDINGS = ("key", "token", "secret", "password")


@dataclass(frozen=True, slots=True)
class Run:
    """One run directory read back: meta, summary metrics and per-case values (None = undefined)."""

    path: Path
    meta: dict[str, Any]
    metrics: dict[str, dict[str, Any]]
    per_case: dict[str, dict[str, float | None]]
    details: dict[str, dict[str, Any]] = field(default_factory=dict)

    def values(self, metric: str) -> dict[str, float]:
        """{case_id: value} for the cases where the metric is defined."""
        return {cid: v for cid, m in self.per_case.items() if (v := m.get(metric)) is not None}

    def means(self) -> dict[str, float]:
        return {name: math.fsum(vals) / len(vals) for name, vals in columns(self.per_case).items()}


def run_meta(
    cases: Sequence[Case], settings: Mapping[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    """The meta block of a run: the cases digest, settings (secrets redacted), date, hardware, git commit."""
    return {
        "cases_digest": cases_digest(cases),
        "cases": len(cases),
        "settings": _redact(dict(settings or {})),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "hardware": _hardware(),
        "git_commit": _git_commit(),
        **extra,
    }


def write_run(
    run_dir: str | Path,
    per_case: Mapping[str, Mapping[str, float | None]],
    meta: Mapping[str, Any],
    details: Mapping[str, Mapping[str, Any]] | None = None,
    n_resamples: int = 2000,
    seed: int = 0,
) -> Path:
    """Write `summary.json` and `cases.jsonl`; `meta` must hold `cases_digest` (see `run_meta`)."""
    if not isinstance(meta.get("cases_digest"), str):
        raise InputError(
            "Run meta has no cases_digest.", "Build the meta with citedocs.eval.runs.run_meta(cases)."
        )
    for case_id, metrics in per_case.items():
        bad = sorted(name for name, value in metrics.items() if not _is_value(value))
        if bad:
            raise InputError(
                f"Case {case_id!r}: {', '.join(bad)} not a finite number or None.", "Fix the scorer."
            )
    path = Path(run_dir)
    path.mkdir(parents=True, exist_ok=True)
    full_meta = {"bootstrap": {"n_resamples": n_resamples, "seed": seed}, **meta}
    summary = {"meta": full_meta, "metrics": summarize(columns(per_case), n_resamples=n_resamples, seed=seed)}
    (path / "summary.json").write_text(
        json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    with (path / "cases.jsonl").open("w", encoding="utf-8") as out:
        for case_id, metrics in per_case.items():
            record: dict[str, Any] = {"id": case_id, "metrics": dict(metrics)}
            if details and case_id in details:
                record["detail"] = dict(details[case_id])
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path


def write_pairs(run_dir: str | Path, pairs: Sequence[Mapping[str, Any]]) -> Path:
    """`judged-pairs.jsonl`: every (case, sentence, n, supported) verdict, in the order the judge gave them."""
    path = Path(run_dir) / "judged-pairs.jsonl"
    path.write_text("".join(json.dumps(p, ensure_ascii=False) + "\n" for p in pairs), encoding="utf-8")
    return path


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """One JSON object a line, blank lines skipped: judged pairs, hand grades."""
    text = Path(path).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def read_run(run_dir: str | Path) -> Run:
    path = Path(run_dir)
    summary_file, cases_file = path / "summary.json", path / "cases.jsonl"
    for needed in (summary_file, cases_file):
        if not needed.is_file():
            raise NotFoundError(f"{needed} does not exist.", "Point at a run directory from `citedocs eval`.")
    summary = _json(summary_file, summary_file.read_text(encoding="utf-8"))
    if not isinstance(summary, dict) or not isinstance(summary.get("meta"), dict):
        raise _damaged(summary_file, "expected an object with meta and metrics")
    per_case: dict[str, dict[str, float | None]] = {}
    details: dict[str, dict[str, Any]] = {}
    for number, line in enumerate(cases_file.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        place = f"{cases_file}:{number}"
        record = _json(place, line)
        if not isinstance(record, dict) or not isinstance(record.get("id"), str):
            raise _damaged(place, "expected an object with an id")
        metrics = record.get("metrics", {})
        if not isinstance(metrics, dict) or not all(_is_value(v) for v in metrics.values()):
            raise _damaged(place, "metrics must be numbers or null")
        if record["id"] in per_case:
            raise _damaged(place, f"case {record['id']!r} appears twice")
        per_case[record["id"]] = {k: None if v is None else float(v) for k, v in metrics.items()}
        if isinstance(record.get("detail"), dict):
            details[record["id"]] = record["detail"]
    return Run(path, summary["meta"], dict(summary.get("metrics") or {}), per_case, details)


def _json(place: str | Path, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise _damaged(place, f"not valid JSON ({exc.msg})") from None


def _damaged(place: str | Path, problem: str) -> InputError:
    return InputError(f"{place}: {problem}.", "The run is damaged: rerun the evaluation.")


def _is_value(value: object) -> bool:
    return value is None or (
        isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    )


def _redact(settings: dict[str, Any]) -> dict[str, Any]:
    return {
        k: ("<redacted>" if k.lower().endswith(_SECRET_ENDINGS) and v else v) for k, v in settings.items()
    }


def _hardware() -> dict[str, Any]:
    return {
        "machine": platform.machine(),
        "processor": platform.processor() or None,
        "cpus": os.cpu_count(),
        "system": platform.platform(),
        "python": platform.python_version(),
    }


def _git_commit() -> str | None:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None
