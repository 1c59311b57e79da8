"""citedocs.eval.gate (named apart from tests/test_gate.py, which tests the answer's relevance gate)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from citedocs.errors import ConfigError, InputError, NotFoundError
from citedocs.eval.cases import Case, Evidence
from citedocs.eval.gate import (
    Comparison,
    check,
    compare,
    compare_all,
    is_lower_better,
    load_floors,
    noise,
    read_noise,
    write_noise,
)
from citedocs.eval.runs import run_meta, write_run

N = 60
CASES = [Case(f"c{i:02d}", f"Question {i}?", evidence=(Evidence("docs/a.md", "A"),)) for i in range(N)]
BASE_KEY_FACTS = [float(x) for x in (np.random.default_rng(0).random(N) < 0.8)]
BASE_WRONG_REFUSALS = [1.0 if i in (3, 17, 40) else 0.0 for i in range(N)]
FLOORS = """
[floors]
key_fact_recall = 0.6
[ceilings]
wrong_refusal_rate = 0.10
[notes]
key_fact_recall = "baseline lower bound minus noise"
"""


def _flip(values: list[float], ones_to_zero: int = 0, zeros_to_one: int = 0) -> list[float]:
    out = list(values)
    ones = [i for i, v in enumerate(out) if v == 1.0]
    zeros = [i for i, v in enumerate(out) if v == 0.0]
    for i in ones[:ones_to_zero]:
        out[i] = 0.0
    for i in zeros[:zeros_to_one]:
        out[i] = 1.0
    return out


def _run(
    path: Path,
    key_facts: list[float] = BASE_KEY_FACTS,
    wrong_refusals: list[float] = BASE_WRONG_REFUSALS,
    cases: list[Case] = CASES,
) -> Path:
    per_case = {
        case.id: {"key_fact_recall": k, "wrong_refusal_rate": w, "faithfulness": None if i == 0 else 1.0}
        for i, (case, k, w) in enumerate(zip(cases, key_facts, wrong_refusals, strict=True))
    }
    return write_run(path, per_case, run_meta(cases, {"top_k": 5}))


def _floors(tmp_path: Path, text: str = FLOORS, name: str = "floors.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _metrics(found: list[Comparison]) -> set[str]:
    return {c.metric for c in found}


def test_a_clear_drop_is_flagged(tmp_path: Path) -> None:
    base = _run(tmp_path / "base")
    new = _run(tmp_path / "new", key_facts=_flip(BASE_KEY_FACTS, ones_to_zero=24))
    regressions = compare(base, new, noise={"key_fact_recall": 0.1})
    assert _metrics(regressions) == {"key_fact_recall"}
    found = regressions[0]
    assert found.diff == pytest.approx(-0.4) and found.ci95[1] < 0 and found.n == N
    assert "REGRESSED" in str(found)


def test_a_same_distribution_rerun_is_not_flagged(tmp_path: Path) -> None:
    base = _run(tmp_path / "base")
    rerun = _run(tmp_path / "rerun", key_facts=_flip(BASE_KEY_FACTS, ones_to_zero=5, zeros_to_one=5))
    assert compare(base, rerun) == []
    everything = compare_all(base, rerun)
    assert _metrics(everything) == {"key_fact_recall", "wrong_refusal_rate", "faithfulness"}
    assert all(not c.regressed for c in everything)
    (faith,) = [c for c in everything if c.metric == "faithfulness"]
    assert faith.n == N - 1


def test_a_drop_within_noise_is_not_flagged_though_the_bootstrap_excludes_zero(tmp_path: Path) -> None:
    base = _run(tmp_path / "base")
    new = _run(tmp_path / "new", key_facts=_flip(BASE_KEY_FACTS, ones_to_zero=8))
    (change,) = [c for c in compare_all(base, new) if c.metric == "key_fact_recall"]
    assert change.ci95[1] < 0
    assert _metrics(compare(base, new, noise=None)) == {"key_fact_recall"}
    assert compare(base, new, noise={"key_fact_recall": 0.15}) == []
    assert _metrics(compare(base, new, noise={"key_fact_recall": 0.10})) == {"key_fact_recall"}


def test_noise_is_the_largest_gap_between_runs_and_gates_compare(tmp_path: Path) -> None:
    runs = [
        _run(tmp_path / "r1"),
        _run(tmp_path / "r2", key_facts=_flip(BASE_KEY_FACTS, ones_to_zero=5, zeros_to_one=5)),
        _run(tmp_path / "r3", key_facts=_flip(BASE_KEY_FACTS, ones_to_zero=9)),
    ]
    measured = noise(runs)
    assert measured == {"faithfulness": 0.0, "key_fact_recall": 0.15, "wrong_refusal_rate": 0.0}
    saved = write_noise(tmp_path / "noise.json", measured, runs)
    assert read_noise(saved) == measured
    new = _run(tmp_path / "new", key_facts=_flip(BASE_KEY_FACTS, ones_to_zero=8))
    assert compare(runs[0], new, noise=read_noise(saved)) == []


def test_noise_pairs_runs_on_the_cases_both_define_so_a_rerun_is_not_flagged(tmp_path: Path) -> None:
    # A judged metric exists only where a run answered: here run A answered cases 0-19 (10 supported, on 0-9),
    # run B answered 10-29 (all supported). Their own means are 0.5 and 1.0, but on the 10 cases both answered
    # (10-19) they are 0.0 and 1.0: the paired gap compare would see, which the noise must cover.
    def judged(path: Path, values: dict[int, float]) -> Path:
        per_case = {c.id: {"citation_precision": values.get(i)} for i, c in enumerate(CASES)}
        return write_run(path, per_case, run_meta(CASES, {}))

    a = judged(tmp_path / "a", {i: 1.0 if i < 10 else 0.0 for i in range(20)})
    b = judged(tmp_path / "b", dict.fromkeys(range(10, 30), 1.0))
    assert noise([a, b]) == {"citation_precision": 1.0}
    assert compare(b, a, noise=noise([a, b])) == []


def test_noise_needs_two_runs_of_the_same_cases(tmp_path: Path) -> None:
    one = _run(tmp_path / "one")
    with pytest.raises(InputError):
        noise([one])
    other_cases = [*CASES[:-1], Case("other", "Other?", evidence=(Evidence("docs/a.md", "A"),))]
    other = _run(tmp_path / "other", cases=other_cases)
    with pytest.raises(InputError):
        noise([one, other])


def test_read_noise_errors(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError):
        read_noise(tmp_path / "absent.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"noise": ["x"]}', encoding="utf-8")
    with pytest.raises(InputError):
        read_noise(bad)


def test_lower_is_better_metrics_regress_when_they_rise(tmp_path: Path) -> None:
    base = _run(tmp_path / "base")
    worse = _run(tmp_path / "worse", wrong_refusals=_flip(BASE_WRONG_REFUSALS, zeros_to_one=12))
    better = _run(tmp_path / "better", wrong_refusals=_flip(BASE_WRONG_REFUSALS, ones_to_zero=3))
    (found,) = compare(base, worse, noise={"wrong_refusal_rate": 0.06})
    assert found.metric == "wrong_refusal_rate" and found.lower_is_better and found.diff == pytest.approx(0.2)
    assert compare(base, better) == []
    assert compare(worse, base) == []


def test_an_improvement_is_not_flagged(tmp_path: Path) -> None:
    base = _run(tmp_path / "base", key_facts=_flip(BASE_KEY_FACTS, ones_to_zero=24))
    assert compare(base, _run(tmp_path / "new")) == []


def test_compare_refuses_runs_on_other_cases_unless_allowed(tmp_path: Path) -> None:
    base = _run(tmp_path / "base")
    edited = [*CASES[:-1], Case(CASES[-1].id, "Edited?", evidence=CASES[-1].evidence)]
    new = _run(tmp_path / "new", cases=edited, key_facts=_flip(BASE_KEY_FACTS, ones_to_zero=24))
    with pytest.raises(InputError, match="different cases"):
        compare(base, new)
    assert _metrics(compare(base, new, allow_case_mismatch=True)) == {"key_fact_recall"}


def test_is_lower_better() -> None:
    assert is_lower_better("wrong_refusal_rate") and is_lower_better("invalid_citation_rate")
    assert is_lower_better("query_ms_p95") and is_lower_better("ttft_ms")
    assert not is_lower_better("correct_refusal_rate") and not is_lower_better("file_recall@5")


def test_check_passes_a_run_that_covers_the_cases_and_clears_the_floors(tmp_path: Path) -> None:
    run = _run(tmp_path / "run")
    assert check(run, CASES, _floors(tmp_path)) == []
    as_json = json.dumps({"floors": {"key_fact_recall": 0.6}, "ceilings": {"wrong_refusal_rate": 0.1}})
    assert check(run, CASES, _floors(tmp_path, as_json, "floors.json")) == []


def test_check_fails_when_the_case_set_differs(tmp_path: Path) -> None:
    run = _run(tmp_path / "run")
    added = [*CASES, Case("new", "A new question?", kind="off_topic")]
    failures = check(run, added, _floors(tmp_path))
    assert {f.kind for f in failures} == {"cases", "digest"}
    assert "missing new" in str(failures[0]) and "Rerun" in str(failures[0])
    assert {f.kind for f in check(run, CASES[1:], _floors(tmp_path))} == {"cases", "digest"}


def test_check_fails_when_a_question_was_edited_without_a_rerun(tmp_path: Path) -> None:
    run = _run(tmp_path / "run")
    edited = [Case(CASES[0].id, "Edited question?", evidence=CASES[0].evidence), *CASES[1:]]
    assert [f.kind for f in check(run, edited, _floors(tmp_path))] == ["digest"]


def test_check_enforces_floors_and_ceilings(tmp_path: Path) -> None:
    low = _run(tmp_path / "low", key_facts=_flip(BASE_KEY_FACTS, ones_to_zero=30))
    (failure,) = check(low, CASES, _floors(tmp_path))
    assert (failure.kind, failure.metric) == ("floor", "key_fact_recall")
    assert "below its floor" in str(failure)
    high = _run(tmp_path / "high", wrong_refusals=_flip(BASE_WRONG_REFUSALS, zeros_to_one=5))
    (failure,) = check(high, CASES, _floors(tmp_path))
    assert (failure.kind, failure.metric) == ("ceiling", "wrong_refusal_rate")


def test_check_fails_a_metric_with_a_floor_but_no_values(tmp_path: Path) -> None:
    run = _run(tmp_path / "run")
    floors = _floors(tmp_path, "[floors]\ncontext_recall = 0.5\n")
    (failure,) = check(run, CASES, floors)
    assert failure.kind == "missing" and failure.metric == "context_recall"


def test_check_notices_a_summary_that_does_not_match_the_cases(tmp_path: Path) -> None:
    run = _run(tmp_path / "run")
    summary_file = run / "summary.json"
    summary = json.loads(summary_file.read_text(encoding="utf-8"))
    summary["metrics"]["key_fact_recall"]["mean"] = 0.99
    summary_file.write_text(json.dumps(summary), encoding="utf-8")
    failures = check(run, CASES, _floors(tmp_path))
    assert [(f.kind, f.metric) for f in failures] == [("summary", "key_fact_recall")]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[floors]\nwrong_refusal_rate = 0.1\n", "Move wrong_refusal_rate under \\[ceilings\\]"),
        ("[ceilings]\nkey_fact_recall = 0.9\n", "Move key_fact_recall under \\[floors\\]"),
        ("[limits]\nx = 1\n", "unknown section"),
        ("[floors]\nkey_fact_recall = 'high'\n", "must map metric names to numbers"),
        ("[floors]\nkey_fact_recall = true\n", "must map metric names to numbers"),
        ("[floors\n", "cannot parse"),
    ],
)
def test_bad_floors_files_are_refused(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_floors(_floors(tmp_path, text))


def test_floors_file_keeps_notes_and_must_exist(tmp_path: Path) -> None:
    floors = load_floors(_floors(tmp_path))
    assert floors.floors == {"key_fact_recall": 0.6} and floors.ceilings == {"wrong_refusal_rate": 0.1}
    assert floors.notes == {"key_fact_recall": "baseline lower bound minus noise"}
    with pytest.raises(NotFoundError):
        load_floors(tmp_path / "absent.toml")


def test_a_floors_file_that_is_not_tables_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="expected tables"):
        load_floors(_floors(tmp_path, "[0.5]", "floors.json"))
    with pytest.raises(ConfigError, match="expected tables"):
        load_floors(_floors(tmp_path, 'notes = "x"\n'))


def test_a_run_with_quotes_compares_its_synthesis_with_an_older_runs_answer(tmp_path: Path) -> None:
    """Before quotes, `key_fact_recall` scored the synthesis alone: a newer run's synthesis is paired with it,
    so a worse synthesis is flagged even when the quotes raise what the reader sees."""
    base = _run(tmp_path / "base")
    worse = _flip(BASE_KEY_FACTS, ones_to_zero=24)
    per_case = {
        case.id: {"key_fact_recall": 1.0, "key_fact_recall_synthesis": k, "wrong_refusal_rate": w}
        for case, k, w in zip(CASES, worse, BASE_WRONG_REFUSALS, strict=True)
    }
    new = write_run(tmp_path / "new", per_case, run_meta(CASES, {"top_k": 5}))
    assert _metrics(compare(base, new, noise={"key_fact_recall_synthesis": 0.1})) == {
        "key_fact_recall_synthesis"
    }
    assert "key_fact_recall_synthesis" not in _metrics(compare_all(base, base))
