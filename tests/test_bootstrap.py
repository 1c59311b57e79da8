from __future__ import annotations

import numpy as np
import pytest

from citedocs.eval.bootstrap import bootstrap_ci, columns, paired_bootstrap_diff, summarize


def _bernoulli(p: float, n: int, seed: int) -> list[float]:
    return [float(x) for x in (np.random.default_rng(seed).random(n) < p)]


def test_bootstrap_is_deterministic_for_a_seed() -> None:
    values = list(np.random.default_rng(1).random(60))
    assert bootstrap_ci(values, seed=3) == bootstrap_ci(values, seed=3)
    assert bootstrap_ci(values, seed=3) != bootstrap_ci(values, seed=4)


def test_bootstrap_mean_is_the_sample_mean_and_the_interval_holds_it() -> None:
    values = _bernoulli(0.5, 100, seed=2)
    mean, lo, hi = bootstrap_ci(values)
    assert mean == pytest.approx(sum(values) / len(values))
    assert lo < mean < hi
    # Normal approximation: half-width about 1.96 * sqrt(p(1-p)/n) = 0.098.
    assert 0.17 < hi - lo < 0.23


def test_bootstrap_interval_narrows_with_more_cases() -> None:
    _, lo_small, hi_small = bootstrap_ci(_bernoulli(0.8, 40, seed=5))
    _, lo_big, hi_big = bootstrap_ci(_bernoulli(0.8, 1000, seed=5))
    assert hi_big - lo_big < (hi_small - lo_small) / 3


def test_bootstrap_alpha_widens_and_narrows_the_interval() -> None:
    values = _bernoulli(0.6, 80, seed=6)
    _, lo95, hi95 = bootstrap_ci(values, alpha=0.05)
    _, lo50, hi50 = bootstrap_ci(values, alpha=0.5)
    assert lo95 <= lo50 and hi50 <= hi95


def test_bootstrap_of_constant_values_and_single_values() -> None:
    assert bootstrap_ci([0.25] * 30) == (0.25, 0.25, 0.25)
    assert bootstrap_ci([1.0]) == (1.0, 1.0, 1.0)


def test_bootstrap_handles_many_cases_in_blocks() -> None:
    values = np.random.default_rng(7).random(5000)
    mean, lo, hi = bootstrap_ci(values, n_resamples=1000)
    assert mean == pytest.approx(float(values.mean()))
    assert lo < mean < hi and hi - lo < 0.03


def test_bootstrap_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        bootstrap_ci([])
    with pytest.raises(ValueError):
        bootstrap_ci([0.1, float("nan")])
    with pytest.raises(ValueError):
        bootstrap_ci([0.1], alpha=0)


def test_paired_diff_cancels_per_case_difficulty() -> None:
    base = list(np.random.default_rng(8).random(50))
    shifted = [b + 0.1 for b in base]
    diff, lo, hi = paired_bootstrap_diff(base, shifted)
    assert diff == pytest.approx(0.1) and lo == pytest.approx(0.1) and hi == pytest.approx(0.1)
    # Unpaired, the same shift would be lost in the spread between cases.
    _, lo_b, hi_b = bootstrap_ci(base)
    assert hi_b - lo_b > 0.1


def test_paired_diff_needs_equal_lengths() -> None:
    with pytest.raises(ValueError):
        paired_bootstrap_diff([1.0, 0.0], [1.0])


def test_columns_skip_undefined_values() -> None:
    per_case: dict[str, dict[str, float | None]] = {
        "a": {"recall": 1.0, "faith": None},
        "b": {"recall": 0.0, "faith": 0.5},
    }
    assert columns(per_case) == {"recall": [1.0, 0.0], "faith": [0.5]}


def test_summarize_gives_the_report_shape() -> None:
    summary = summarize({"recall": [1.0, 0.0, 1.0, 1.0], "never": []})
    assert list(summary) == ["recall"]
    entry = summary["recall"]
    assert entry["mean"] == 0.75 and entry["n"] == 4
    lo, hi = entry["ci95"]
    assert 0.0 <= lo <= 0.75 <= hi <= 1.0
    assert summary == summarize({"recall": [1.0, 0.0, 1.0, 1.0]})
