"""The regression gate over run directories.

Runs are directories written by `citedocs.eval.runs.write_run`. Two uses:

- `check`: what CI runs without a model. The committed results must cover exactly the current cases (same
  ids, same digest: a case added or edited without a rerun fails) and clear the committed floors/ceilings.
- `compare`: where the models run. A metric regressed only when the paired bootstrap interval of
  (new - base) lies wholly on the bad side of zero AND the drop exceeds the run-to-run noise. The bootstrap
  over cases cannot see run noise (same code, different text at temperature 0), so a rerun alone can pass
  the first test; `noise` measures the second from repeated runs.

Floors file (TOML or JSON): `[floors]` for metrics where higher is better, `[ceilings]` for those where
higher is worse (`is_lower_better`), optional `[notes]` with the reason behind a number.
"""

from __future__ import annotations

import itertools
import json
import math
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from citedocs.errors import ConfigError, InputError, NotFoundError
from citedocs.eval.bootstrap import columns, paired_bootstrap_diff
from citedocs.eval.cases import Case, cases_digest
from citedocs.eval.runs import Run, read_run

__all__ = [
    "LOWER_IS_BETTER",
    "Comparison",
    "Failure",
    "Floors",
    "Regression",
    "check",
    "compare",
    "compare_all",
    "is_lower_better",
    "load_floors",
    "noise",
    "read_noise",
    "write_noise",
]

LOWER_IS_BETTER = frozenset(
    {"wrong_refusal_rate", "wrong_refusal_rate_reader", "invalid_citation_rate", "answer_chars"}
)
_SUMMARY_TOLERANCE = 1e-4


def is_lower_better(metric: str) -> bool:
    """Rates of mistakes and timings: a rise is the bad direction."""
    return metric in LOWER_IS_BETTER or metric.endswith(("_ms", "_seconds")) or "_ms_p" in metric


@dataclass(frozen=True, slots=True)
class Failure:
    kind: str  # cases | digest | summary | missing | floor | ceiling
    message: str
    metric: str | None = None

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True, slots=True)
class Floors:
    floors: dict[str, float]
    ceilings: dict[str, float]
    notes: dict[str, str]


@dataclass(frozen=True, slots=True)
class Comparison:
    """One metric, base vs new, paired on case ids; `diff` and `ci95` are new - base."""

    metric: str
    base_mean: float
    new_mean: float
    diff: float
    ci95: tuple[float, float]
    noise: float | None
    n: int
    lower_is_better: bool
    regressed: bool

    def __str__(self) -> str:
        verdict = "REGRESSED" if self.regressed else "ok"
        noise = "unmeasured" if self.noise is None else f"{self.noise:.3f}"
        return (
            f"{self.metric}: {self.base_mean:.3f} -> {self.new_mean:.3f} ({self.diff:+.3f}, 95% CI "
            f"[{self.ci95[0]:+.3f}, {self.ci95[1]:+.3f}], noise {noise}, n={self.n}) {verdict}"
        )


Regression = Comparison


def load_floors(floors_file: str | Path) -> Floors:
    """Read a floors file (.toml or .json); a floor on a lower-is-better metric, or vice versa, is refused."""
    path = Path(floors_file)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise NotFoundError(f"Floors file {path} does not exist.", "Commit one next to the cases.") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(
            f"{path}: cannot parse ({exc}).", "Fix the syntax; see citedocs.eval.gate."
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("notes", {}), dict):
        raise ConfigError(f"{path}: expected tables floors, ceilings, notes.", "See citedocs.eval.gate.")
    unknown = set(data) - {"floors", "ceilings", "notes"}
    if unknown:
        raise ConfigError(f"{path}: unknown section(s) {sorted(unknown)}.", "Use floors, ceilings and notes.")
    floors = _bounds(path, data.get("floors", {}), "floors")
    ceilings = _bounds(path, data.get("ceilings", {}), "ceilings")
    for name in floors:
        if is_lower_better(name):
            raise ConfigError(f"{path}: {name} is lower-is-better.", f"Move {name} under [ceilings].")
    for name in ceilings:
        if not is_lower_better(name):
            raise ConfigError(
                f"{path}: {name} is higher-is-better.",
                f"Move {name} under [floors] (or add it to LOWER_IS_BETTER if a rise is bad).",
            )
    notes = {str(k): str(v) for k, v in data.get("notes", {}).items()}
    return Floors(floors, ceilings, notes)


def check(run_dir: str | Path, cases: Sequence[Case], floors_file: str | Path) -> list[Failure]:
    """Everything wrong with a committed run for the current cases and floors; empty means it passes."""
    run = read_run(run_dir)
    floors = load_floors(floors_file)
    failures: list[Failure] = []
    wanted, have = [c.id for c in cases], set(run.per_case)
    missing = [cid for cid in wanted if cid not in have]
    extra = sorted(have - set(wanted))
    if missing or extra:
        failures.append(
            Failure(
                "cases",
                f"Results do not cover exactly the current cases: missing {_few(missing)}, "
                f"extra {_few(extra)}. Rerun the evaluation and commit the new run.",
            )
        )
    if run.meta.get("cases_digest") != cases_digest(cases):
        failures.append(
            Failure("digest", "Results were made for other cases (digest differs): rerun and commit the run.")
        )
    means = run.means()
    for name, mean in means.items():
        recorded = run.metrics.get(name, {}).get("mean")
        if not isinstance(recorded, int | float) or abs(recorded - mean) > _SUMMARY_TOLERANCE:
            failures.append(
                Failure("summary", f"summary.json {name} does not match cases.jsonl: rewrite the run.", name)
            )
    for name, bound in floors.floors.items():
        failures.extend(_bound_failure(name, means.get(name), bound, "floor"))
    for name, bound in floors.ceilings.items():
        failures.extend(_bound_failure(name, means.get(name), bound, "ceiling"))
    return failures


def noise(run_dirs: Sequence[str | Path]) -> dict[str, float]:
    """Run-to-run noise per metric: the largest gap between the means of two of >= 2 runs of the same code,
    each pair compared on the cases where both define the metric (as `compare` pairs them).

    The largest gap, not a standard deviation: with the 2-4 runs anyone can afford, a std is unstable and smaller
    than gaps actually seen. Paired, not the range of each run's own mean: judged metrics exist only for the
    cases a run answered, and on 2026-11-30 the range (0.142) was smaller than the paired drop between two runs of
    the same code (0.188 in citation precision), so `compare` flagged a rerun.
    """
    if len(run_dirs) < 2:
        raise InputError(
            "Noise needs at least two runs of the same code.", "Run the evaluation again and pass both."
        )
    runs = [read_run(d) for d in run_dirs]
    digests = {run.meta.get("cases_digest") for run in runs}
    if len(digests) != 1:
        raise InputError("The runs were made on different cases.", "Rerun them all on the current cases.")
    shared = set.intersection(*(set(columns(run.per_case)) for run in runs))
    measured: dict[str, float] = {}
    for name in sorted(shared):
        values = [run.values(name) for run in runs]
        gaps = [0.0]
        for a, b in itertools.combinations(values, 2):
            ids = [cid for cid in a if cid in b]
            if ids:
                gaps.append(abs(math.fsum(a[c] for c in ids) - math.fsum(b[c] for c in ids)) / len(ids))
        # Rounded up, so the gap seen between two runs is itself within the noise.
        measured[name] = math.ceil(max(gaps) * 10_000 - 1e-9) / 10_000
    return measured


def write_noise(path: str | Path, measured: Mapping[str, float], run_dirs: Sequence[str | Path]) -> Path:
    """Save noise with the runs it came from, so the number can be traced and remeasured."""
    out = Path(path)
    payload = {
        "method": f"largest paired gap between per-metric means of any two of {len(run_dirs)} runs of the same code",
        "runs": [str(d) for d in run_dirs],
        "noise": dict(measured),
    }
    out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return out


def read_noise(path: str | Path) -> dict[str, float]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        return {str(k): float(v) for k, v in data["noise"].items()}
    except FileNotFoundError:
        raise NotFoundError(
            f"Noise file {path} does not exist.", "Measure it with `noise RUN RUN ...`."
        ) from None
    except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
        raise InputError(
            f"{path}: not a noise file.", "Measure it again with `noise RUN RUN ... --write`."
        ) from None


def compare_all(
    base_dir: str | Path,
    new_dir: str | Path,
    noise: Mapping[str, float] | None = None,
    n_resamples: int = 2000,
    seed: int = 0,
    allow_case_mismatch: bool = False,
) -> list[Comparison]:
    """Every metric both runs have, paired on the cases where both define it."""
    base, new = read_run(base_dir), read_run(new_dir)
    if base.meta.get("cases_digest") != new.meta.get("cases_digest") and not allow_case_mismatch:
        raise InputError(
            "The two runs were made on different cases.",
            "Rerun the base on the current cases (or allow a mismatch to pair only the shared ids).",
        )
    _synthesis_alias(base, new)
    results: list[Comparison] = []
    base_names = set(columns(base.per_case))
    for name in sorted(base_names & set(columns(new.per_case))):
        base_values, new_values = base.values(name), new.values(name)
        ids = [cid for cid in base_values if cid in new_values]
        if not ids:
            continue
        b = [base_values[cid] for cid in ids]
        n = [new_values[cid] for cid in ids]
        diff, lo, hi = paired_bootstrap_diff(b, n, n_resamples=n_resamples, seed=seed)
        measured = None if noise is None else noise.get(name)
        threshold = measured or 0.0
        lower = is_lower_better(name)
        bad = (lo > 0 and diff > threshold) if lower else (hi < 0 and -diff > threshold)
        results.append(
            Comparison(
                name,
                math.fsum(b) / len(b),
                math.fsum(n) / len(n),
                diff,
                (lo, hi),
                measured,
                len(ids),
                lower,
                bad,
            )
        )
    return results


def _synthesis_alias(base: Run, new: Run) -> None:
    """A base run made before answers had quotes (issue 44) scored the synthesis alone as `key_fact_recall`:
    that is its `key_fact_recall_synthesis`, so a newer run's synthesis is compared with it too (not only the
    whole answer the reader now sees)."""
    name = "key_fact_recall_synthesis"
    if name in columns(base.per_case) or name not in columns(new.per_case):
        return
    for values in base.per_case.values():
        if "key_fact_recall" in values:
            values["key_fact_recall_synthesis"] = values["key_fact_recall"]


def compare(
    base_dir: str | Path,
    new_dir: str | Path,
    noise: Mapping[str, float] | None = None,
    n_resamples: int = 2000,
    seed: int = 0,
    allow_case_mismatch: bool = False,
) -> list[Regression]:
    """The metrics that regressed beyond both case-sampling and run-to-run noise.

    A metric absent from `noise` (or `noise=None`) is judged by the bootstrap alone; its `noise` reads None.
    """
    found = compare_all(base_dir, new_dir, noise, n_resamples, seed, allow_case_mismatch)
    return [c for c in found if c.regressed]


def _bound_failure(name: str, mean: float | None, bound: float, kind: str) -> list[Failure]:
    if mean is None:
        return [
            Failure("missing", f"{name} has a {kind} but no values in the run: rerun with that metric.", name)
        ]
    if (kind == "floor" and mean < bound) or (kind == "ceiling" and mean > bound):
        side = "below its floor" if kind == "floor" else "above its ceiling"
        return [
            Failure(
                kind,
                f"{name} = {mean:.4f} is {side} {bound}: fix the regression or justify a new bound.",
                name,
            )
        ]
    return []


def _bounds(path: Path, table: object, section: str) -> dict[str, float]:
    if not isinstance(table, dict) or not all(
        isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in table.values()
    ):
        raise ConfigError(
            f"{path}: [{section}] must map metric names to numbers.", "e.g. key_fact_recall = 0.7"
        )
    return {str(k): float(v) for k, v in table.items()}


def _few(ids: Sequence[str]) -> str:
    if not ids:
        return "none"
    shown = ", ".join(ids[:5])
    return f"{shown} (+{len(ids) - 5} more)" if len(ids) > 5 else shown
