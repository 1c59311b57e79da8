"""The committed evaluation baselines still describe the current cases and clear their floors (no model needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from citedocs.eval.cases import load_cases, sample_cases
from citedocs.eval.gate import check, compare
from citedocs.eval.retrieval import retrieval_cases
from conftest import REPO, shared

BASELINE = REPO / "eval" / "baseline"


def _cases() -> list:  # type: ignore[type-arg]
    data = shared("claude-docs-qa")
    return load_cases(
        data / "cases.jsonl",
        REPO / "eval/cases/claude-docs-key-facts.jsonl",
        REPO / "eval/cases/claude-docs-extra.jsonl",
    )


def test_hybrid_retrieval_baseline_clears_its_floors() -> None:
    failures = check(
        BASELINE / "retrieval-hybrid", retrieval_cases(_cases()), REPO / "eval/floors-retrieval.toml"
    )
    assert not failures, failures


# Sampled runs (`eval answer --every N`) and their N; answer-quotes-1 is the first live run with quotes (issue 44),
# cut to every 3rd case of each kind by a machine shared with other jobs.
SAMPLED_RUNS = [
    ("answer-current-1", 3),
    ("answer-current-2", 3),
    ("answer-current-3", 3),
    ("answer-sample-1", 3),
    ("answer-sample-2", 3),
    ("answer-sample-3", 3),
    ("answer-quotes-1", 3),
]


@pytest.mark.parametrize(("run", "every"), SAMPLED_RUNS)
def test_answer_baselines_cover_the_sampled_cases_and_clear_the_floors(run: str, every: int) -> None:
    if not (BASELINE / run).exists():
        pytest.skip(f"{run} is not committed")
    failures = check(BASELINE / run, sample_cases(_cases(), every), REPO / "eval/floors-answer.toml")
    assert not failures, failures


# The current run of all 81 cases, with its hand-scored twin (`<run>-hand`); earlier runs are in git history.
FULL_RUNS = ["answer-gate-2", "answer-quotes-2", "answer-quotes-3", "answer-quotes-4"]


@pytest.mark.parametrize("run", FULL_RUNS)
def test_the_full_answer_baselines_cover_every_case_and_clear_the_floors(run: str) -> None:
    if not (BASELINE / run).exists():
        pytest.skip(f"{run} is not committed")
    failures = check(BASELINE / run, _cases(), REPO / "eval/floors-answer.toml")
    assert not failures, failures


def test_the_gate_flags_top_k_1_and_not_a_rerun() -> None:
    from citedocs.eval.gate import read_noise

    if not (BASELINE / "answer-current-top1").exists():
        pytest.skip("the top-k 1 run is not committed")
    measured = read_noise(BASELINE / "answer-noise.json")
    base = BASELINE / "answer-current-1"
    assert compare(base, BASELINE / "answer-current-top1", measured)
    reruns = ["answer-current-2", "answer-current-3", "answer-current-rerun"]
    for rerun in [r for r in reruns if (BASELINE / r).exists()]:
        assert not compare(base, BASELINE / rerun, measured), rerun


def test_a_run_on_other_cases_fails_the_check(tmp_path: Path) -> None:
    failures = check(BASELINE / "retrieval-hybrid", _cases(), REPO / "eval/floors-retrieval.toml")
    assert failures and failures[0].kind == "cases"


@pytest.mark.parametrize("run", [*FULL_RUNS, "answer-quotes-1"])
def test_every_judged_pair_of_a_full_run_is_hand_graded_and_the_hand_scores_reproduce(
    tmp_path: Path, run: str
) -> None:
    import json

    from citedocs.eval.rejudge import hand_score
    from citedocs.eval.runs import read_run

    if not (BASELINE / f"{run}-hand").exists():
        pytest.skip(f"{run}-hand is not committed")
    graded = [
        json.loads(line)
        for grades in sorted((REPO / "eval").glob("judge-grades*.jsonl"))
        for line in grades.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    counts = hand_score(BASELINE / run, tmp_path / "hand", graded)
    assert counts["ungraded_cases"] == 0 and counts["graded_cases"] > 0
    assert read_run(tmp_path / "hand").metrics == read_run(BASELINE / f"{run}-hand").metrics
