from __future__ import annotations

import json
from pathlib import Path

import pytest

from citedocs.errors import InputError, NotFoundError
from citedocs.eval.cases import Case, Evidence, cases_digest
from citedocs.eval.runs import read_run, run_meta, write_run

CASES = [
    Case("a", "First?", evidence=(Evidence("docs/x.md", "X"),)),
    Case("b", "Second?", evidence=(Evidence("docs/x.md", "Y"),)),
    Case("z", "Pizza?", kind="off_topic"),
]
PER_CASE: dict[str, dict[str, float | None]] = {
    "a": {"file_recall@5": 1.0, "correct_refusal_rate": None},
    "b": {"file_recall@5": 0.5, "correct_refusal_rate": None},
    "z": {"file_recall@5": None, "correct_refusal_rate": 1.0},
}


def test_run_meta_records_digest_settings_and_environment() -> None:
    meta = run_meta(
        CASES, {"top_k": 5, "max_tokens": 512, "llm_api_key": "sk-secret", "empty_key": ""}, mode="x"
    )
    assert meta["cases_digest"] == cases_digest(CASES) and meta["cases"] == 3
    assert meta["settings"] == {"top_k": 5, "max_tokens": 512, "llm_api_key": "<redacted>", "empty_key": ""}
    assert meta["mode"] == "x"
    assert meta["date"].endswith("+00:00")
    assert meta["hardware"]["cpus"] >= 1 and meta["hardware"]["python"].startswith("3.")
    assert meta["git_commit"] is None or len(meta["git_commit"]) == 40


def test_write_then_read_round_trips(tmp_path: Path) -> None:
    details = {"a": {"answer": "Yes [1].", "citations": [1]}}
    path = write_run(tmp_path / "run", PER_CASE, run_meta(CASES), details=details, n_resamples=500, seed=1)
    run = read_run(path)
    assert run.per_case == PER_CASE
    assert run.details == details
    assert run.meta["cases_digest"] == cases_digest(CASES)
    assert run.meta["bootstrap"] == {"n_resamples": 500, "seed": 1}
    assert run.metrics["file_recall@5"]["mean"] == 0.75 and run.metrics["file_recall@5"]["n"] == 2
    assert set(run.metrics["file_recall@5"]) == {"mean", "ci95", "n"}
    assert run.means() == {"file_recall@5": 0.75, "correct_refusal_rate": 1.0}
    assert run.values("file_recall@5") == {"a": 1.0, "b": 0.5}
    summary = json.loads((path / "summary.json").read_text(encoding="utf-8"))
    assert set(summary) == {"meta", "metrics"}


def test_writing_is_deterministic(tmp_path: Path) -> None:
    meta = {"cases_digest": cases_digest(CASES)}
    one = write_run(tmp_path / "one", PER_CASE, meta)
    two = write_run(tmp_path / "two", PER_CASE, meta)
    for name in ("summary.json", "cases.jsonl"):
        assert (one / name).read_bytes() == (two / name).read_bytes()


def test_write_needs_a_cases_digest(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="run_meta"):
        write_run(tmp_path / "run", PER_CASE, {"date": "today"})


def test_write_refuses_values_that_are_not_numbers(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="'a': m not a finite number"):
        write_run(tmp_path / "run", {"a": {"m": float("nan")}}, {"cases_digest": "sha256:0"})


def test_read_reports_missing_and_damaged_runs(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError):
        read_run(tmp_path / "absent")
    path = write_run(tmp_path / "run", PER_CASE, {"cases_digest": "sha256:0"})
    cases_file = path / "cases.jsonl"
    good = cases_file.read_text(encoding="utf-8")
    for bad_line, message in [
        ("{oops", "not valid JSON"),
        ('{"metrics": {}}', "expected an object with an id"),
        ('{"id": "q", "metrics": {"m": "high"}}', "numbers or null"),
        ('{"id": "q", "metrics": {"m": true}}', "numbers or null"),
        ('{"id": "a", "metrics": {}}', "appears twice"),
    ]:
        cases_file.write_text(good + bad_line + "\n", encoding="utf-8")
        with pytest.raises(InputError, match=message) as caught:
            read_run(path)
        assert "cases.jsonl:4:" in str(caught.value) and "rerun" in str(caught.value)
    cases_file.write_text(good, encoding="utf-8")
    (path / "summary.json").write_text("[]", encoding="utf-8")
    with pytest.raises(InputError, match="meta and metrics"):
        read_run(path)
