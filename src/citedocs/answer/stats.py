"""Rolling answer statistics for `GET /stats`: counts, P50/P95 per stage, tokens and cost.

A window of the last answers (1000 by default) keeps the numbers about the service as it runs now, and its
memory bounded, however long it has been up.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["DEFAULT_WINDOW", "TIMING_KEYS", "AnswerRecord", "RollingStats", "ms", "percentile"]

DEFAULT_WINDOW = 1000
TIMING_KEYS = ("retrieval_ms", "ttft_ms", "generation_ms", "total_ms")


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100) by linear interpolation between closest ranks; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    if len(ordered) == 1:
        return float(ordered[0])
    rank = (len(ordered) - 1) * q / 100.0
    low, high = math.floor(rank), math.ceil(rank)
    return float(ordered[low] + (ordered[high] - ordered[low]) * (rank - low))


@dataclass(frozen=True, slots=True)
class AnswerRecord:
    """One answer: `outcome` is answer, refusal, error or cancelled (the client left); `stage` names a failure."""

    outcome: str
    timings: Mapping[str, float | None]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    stage: str | None = None
    gate_refusal: bool = False


class RollingStats:
    """Thread-safe window of the last `window` answer records."""

    def __init__(self, window: int = DEFAULT_WINDOW) -> None:
        self.window = window
        self._records: deque[AnswerRecord] = deque(maxlen=window)
        self._lock = threading.Lock()
        self._total = 0

    def record(self, record: AnswerRecord) -> None:
        with self._lock:
            self._records.append(record)
            self._total += 1

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            records = list(self._records)
            total = self._total
        return summarize(records, total, self.window)


def _p50_p95(values: Sequence[float]) -> dict[str, float | None]:
    def rounded(q: float) -> float | None:
        value = percentile(values, q)
        return None if value is None else round(value, 1)

    return {"p50": rounded(50), "p95": rounded(95), "n": len(values)}


def summarize(records: Sequence[AnswerRecord], total: int, window: int) -> dict[str, Any]:
    """Plain-data summary of `records` (the window) and `total` (answers since start)."""
    errors: dict[str, int] = {}
    for r in records:
        if r.outcome == "error":
            errors[r.stage or "internal"] = errors.get(r.stage or "internal", 0) + 1
    timings = {
        key: _p50_p95([float(v) for r in records if (v := r.timings.get(key)) is not None])
        for key in TIMING_KEYS
    }
    generated = [r for r in records if r.completion_tokens or r.prompt_tokens]
    return {
        "window": window,
        "answers_since_start": total,
        "answers": len(records),
        "answered": sum(r.outcome == "answer" for r in records),
        "refusals": sum(r.outcome == "refusal" for r in records),
        "refusals_before_model": sum(r.gate_refusal for r in records),
        "cancelled": sum(r.outcome == "cancelled" for r in records),
        "errors": sum(errors.values()),
        "errors_by_stage": errors,
        "timings_ms": timings,
        "tokens": {
            "prompt": _p50_p95([float(r.prompt_tokens) for r in generated]),
            "completion": _p50_p95([float(r.completion_tokens) for r in generated]),
            "prompt_total": sum(r.prompt_tokens for r in records),
            "completion_total": sum(r.completion_tokens for r in records),
        },
        "cost_usd": {
            "total": round(sum(r.cost_usd for r in records), 6),
            "per_answer": _p50_p95([r.cost_usd for r in generated]),
        },
    }


def ms(seconds: float) -> float:
    """A duration as the milliseconds every timing of an answer is reported in (0.1 ms steps)."""
    return round(seconds * 1000.0, 1)
