"""Retrieval floors, live: the real index and keyword search on the real claude-docs cases, no model needed."""

from __future__ import annotations

from pathlib import Path

from citedocs.eval.cases import load_cases
from citedocs.eval.gate import check
from citedocs.eval.retrieval import retrieval_cases, run_retrieval_eval
from citedocs.settings import Settings
from conftest import REPO, shared


def test_keyword_retrieval_clears_the_committed_floors(tmp_path: Path) -> None:
    data = shared("claude-docs-qa")
    cases = load_cases(
        data / "cases.jsonl",
        REPO / "eval/cases/claude-docs-key-facts.jsonl",
        REPO / "eval/cases/claude-docs-extra.jsonl",
    )
    run_dir = tmp_path / "run"
    result = run_retrieval_eval(
        data / "docs",
        cases,
        Settings(db=str(tmp_path / "x.db"), embedder="none"),
        mode="keyword",
        run_dir=run_dir,
    )
    assert result["cases"] == 60
    assert (
        result["file_recall@5"]["ci95"][0]
        <= result["file_recall@5"]["mean"]
        <= result["file_recall@5"]["ci95"][1]
    )
    failures = check(run_dir, retrieval_cases(cases), REPO / "eval/floors-retrieval.toml")
    assert not failures, failures


def test_japanese_keyword_retrieval_clears_its_floors(tmp_path: Path) -> None:
    data = shared("ja-developers-reference")
    cases = load_cases(data / "cases.jsonl")
    run_dir = tmp_path / "run"
    result = run_retrieval_eval(
        data / "docs",
        cases,
        Settings(db=str(tmp_path / "x.db"), embedder="none"),
        mode="keyword",
        run_dir=run_dir,
    )
    assert result["cases"] == 30
    failures = check(run_dir, retrieval_cases(cases), REPO / "eval/floors-retrieval-ja.toml")
    assert not failures, failures
