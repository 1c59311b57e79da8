"""Percentile bootstrap over cases: how much a mean would move with another draw of questions.

Deterministic: the same values and seed give the same interval. It sees case-sampling noise only, not
run-to-run noise (a rerun of the same code gives different answers); `gate.noise` measures that.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["bootstrap_ci", "columns", "paired_bootstrap_diff", "summarize"]

_MAX_CELLS = 4_000_000


def bootstrap_ci(
    values: Sequence[float] | NDArray[np.float64], n_resamples: int = 2000, seed: int = 0, alpha: float = 0.05
) -> tuple[float, float, float]:
    """(mean, lo, hi): the sample mean and the alpha/2, 1 - alpha/2 percentiles of resampled means."""
    data = np.asarray(values, dtype=np.float64)
    if data.ndim != 1 or data.size == 0:
        raise ValueError("bootstrap needs a non-empty 1-D list of values")
    if not np.all(np.isfinite(data)):
        raise ValueError("bootstrap values must be finite numbers")
    if n_resamples < 1 or not 0 < alpha < 1:
        raise ValueError("n_resamples must be >= 1 and alpha in (0, 1)")
    rng = np.random.default_rng(seed)
    n = data.size
    block = max(1, _MAX_CELLS // n)
    means = np.empty(n_resamples, dtype=np.float64)
    for start in range(0, n_resamples, block):
        stop = min(start + block, n_resamples)
        idx = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = data[idx].mean(axis=1)
    lo, hi = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return float(data.mean()), float(lo), float(hi)


def paired_bootstrap_diff(
    base: Sequence[float],
    new: Sequence[float],
    n_resamples: int = 2000,
    seed: int = 0,
    alpha: float = 0.05,
) -> tuple[float, float, float]:
    """(mean of new - base, lo, hi), resampling cases with their pairs so per-question difficulty cancels."""
    if len(base) != len(new):
        raise ValueError(f"paired values need equal lengths, got {len(base)} and {len(new)}")
    diffs = np.asarray(new, dtype=np.float64) - np.asarray(base, dtype=np.float64)
    return bootstrap_ci(diffs, n_resamples=n_resamples, seed=seed, alpha=alpha)


def columns(per_case: Mapping[str, Mapping[str, float | None]]) -> dict[str, list[float]]:
    """{case_id: {metric: value}} → {metric: [values]}, skipping None (metric undefined for that case)."""
    out: dict[str, list[float]] = {}
    for metrics in per_case.values():
        for name, value in metrics.items():
            if value is not None:
                out.setdefault(name, []).append(float(value))
    return out


def summarize(
    values_by_metric: Mapping[str, Iterable[float]], n_resamples: int = 2000, seed: int = 0
) -> dict[str, dict[str, Any]]:
    """{metric: values} → {metric: {"mean": x, "ci95": [lo, hi], "n": cases}}, the shape reports use.

    Rounded to 4 decimals: more digits are below any interval this suite can produce. A metric with no
    values is left out.
    """
    out: dict[str, dict[str, Any]] = {}
    for name in sorted(values_by_metric):
        values = list(values_by_metric[name])
        if not values:
            continue
        mean, lo, hi = bootstrap_ci(values, n_resamples=n_resamples, seed=seed)
        out[name] = {"mean": round(mean, 4), "ci95": [round(lo, 4), round(hi, 4)], "n": len(values)}
    return out
