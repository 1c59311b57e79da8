from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from citedocs.errors import InputError, NotFoundError
from citedocs.eval.cases import Case, Evidence, cases_digest, load_cases
from citedocs.eval.metrics import key_fact_recall, normalize_heading
from conftest import REPO, shared

KEY_FACTS = REPO / "eval" / "cases" / "claude-docs-key-facts.jsonl"
EXTRA = REPO / "eval" / "cases" / "claude-docs-extra.jsonl"
EVIDENCE = {"file": "docs/a.md", "heading": "Install"}


def _write(path: Path, *records: dict[str, Any] | str) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def base(tmp_path: Path) -> Path:
    return _write(
        tmp_path / "base.jsonl",
        {"id": "q1", "question": "How do I install?", "answer": "Run pip.", "evidence": [EVIDENCE]},
        {"id": "q2", "question": "What port?", "evidence": [EVIDENCE, {**EVIDENCE, "heading": "Serve"}]},
    )


def test_load_cases_reads_fields_and_defaults(base: Path) -> None:
    cases = load_cases(base)
    assert [c.id for c in cases] == ["q1", "q2"]
    first = cases[0]
    assert first.kind == "answerable" and first.answerable and first.key_facts == ()
    assert first.evidence == (Evidence("docs/a.md", "Install"),)
    assert first.evidence[0].file_name == "a.md"
    assert cases[1].evidence_files == ("a.md",)
    assert cases[1].evidence_sections == (("a.md", "Install"), ("a.md", "Serve"))


def test_overlays_add_key_facts_and_kind_in_any_file_order(base: Path, tmp_path: Path) -> None:
    overlay = _write(
        tmp_path / "overlay.jsonl",
        {"id": "q1", "key_facts": ["pip"]},
        {"id": "q2", "kind": "unanswerable"},
        "",
        {"id": "n1", "question": "Best pizza?", "kind": "off_topic", "note": "off topic"},
    )
    for order in ((base, overlay), (overlay, base)):
        cases = {c.id: c for c in load_cases(*order)}
        assert cases["q1"].key_facts == ("pip",)
        assert cases["q2"].kind == "unanswerable"
        assert cases["n1"].kind == "off_topic" and cases["n1"].evidence == ()


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        (json.dumps({"question": "no id?"}), "missing or empty `id`"),
        (json.dumps({"id": "n", "question": "Q", "evidence": [EVIDENCE], "answr": "typo"}), "unknown field"),
        (json.dumps({"id": "n", "question": "Q", "kind": "maybe"}), "unknown kind"),
        (json.dumps({"id": "n", "question": "Q"}), "has no evidence"),
        (
            json.dumps({"id": "n", "question": "Q", "kind": "off_topic", "evidence": [EVIDENCE]}),
            "lists evidence",
        ),
        (json.dumps({"id": "n", "question": "Q", "evidence": [EVIDENCE], "key_facts": "pip"}), "key_facts"),
        (json.dumps({"id": "n", "question": "Q", "evidence": [{"file": "a.md"}]}), "non-empty `file` and"),
        (json.dumps({"id": "n", "question": "", "evidence": [EVIDENCE]}), "`question` must be"),
        (json.dumps({"id": "q1", "question": "Again?", "evidence": [EVIDENCE]}), "already defined at"),
        (json.dumps({"id": "nope", "key_facts": ["x"]}), "overlay for unknown case"),
        (json.dumps({"id": "q1", "key_facts": ["x"], "answer": "no"}), "unknown field"),
    ],
)
def test_bad_lines_name_the_file_and_line(base: Path, tmp_path: Path, line: str, message: str) -> None:
    bad = _write(tmp_path / "bad.jsonl", {"id": "ok", "question": "Fine?", "kind": "off_topic"}, "", line)
    with pytest.raises(InputError) as caught:
        load_cases(base, bad)
    assert f"{bad}:3:" in str(caught.value)
    assert message in str(caught.value)


def test_key_facts_on_a_case_made_unanswerable_are_refused(base: Path, tmp_path: Path) -> None:
    overlay = _write(tmp_path / "o.jsonl", {"id": "q1", "kind": "unanswerable", "key_facts": ["pip"]})
    with pytest.raises(InputError, match="Key facts only apply"):
        load_cases(base, overlay)


def test_missing_files_and_no_files(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError):
        load_cases(tmp_path / "absent.jsonl")
    with pytest.raises(InputError):
        load_cases()


def test_digest_covers_ids_and_questions_only_and_ignores_order() -> None:
    a = Case("a", "Question A?", evidence=(Evidence("docs/x.md", "X"),))
    b = Case("b", "Question B?", kind="off_topic")
    digest = cases_digest([a, b])
    assert digest.startswith("sha256:") and digest == cases_digest([b, a])
    assert cases_digest([a, Case("b", "Question B, edited?", kind="off_topic")]) != digest
    assert cases_digest([a, Case("c", "Question B?", kind="off_topic")]) != digest
    assert cases_digest([a]) != digest
    assert cases_digest([Case("a", "Question A?", key_facts=("x",)), b]) == digest


def _all_cases() -> list[Case]:
    return load_cases(shared("claude-docs-qa", "cases.jsonl"), KEY_FACTS, EXTRA)


def test_our_files_merge_with_the_shared_cases() -> None:
    cases = _all_cases()
    kinds = Counter(c.kind for c in cases)
    assert kinds["answerable"] == 60
    assert kinds["unanswerable"] >= 12
    assert kinds["off_topic"] >= 6
    assert len({c.id for c in cases}) == len(cases)


def test_every_answerable_case_has_two_to_four_short_key_facts() -> None:
    for case in _all_cases():
        if case.answerable:
            assert 2 <= len(case.key_facts) <= 4, case.id
            assert all(len(fact) <= 30 for fact in case.key_facts), case.id


def test_every_reference_answer_contains_its_own_key_facts() -> None:
    for case in _all_cases():
        if case.answerable:
            assert key_fact_recall(case.answer, case.key_facts) == 1.0, case.id


def test_every_evidence_heading_is_a_heading_of_its_file() -> None:
    corpus = shared("claude-docs-qa")
    for case in _all_cases():
        for evidence in case.evidence:
            lines = (corpus / evidence.file).read_text(encoding="utf-8").splitlines()
            headings = {normalize_heading(line.lstrip("#")) for line in lines if line.startswith("#")}
            assert normalize_heading(evidence.heading) in headings, (case.id, evidence.heading)


def test_our_extra_questions_are_new_and_refusable() -> None:
    lines = shared("claude-docs-qa", "cases.jsonl").read_text(encoding="utf-8").splitlines()
    shared_questions = {json.loads(line)["question"] for line in lines}
    extra = load_cases(EXTRA)
    assert all(case.question not in shared_questions for case in extra)
    assert all(case.kind in ("unanswerable", "off_topic") and not case.evidence for case in extra)


def test_key_facts_tell_answers_apart_and_are_not_just_the_question() -> None:
    answerable = [case for case in _all_cases() if case.answerable]
    other = [
        key_fact_recall(o.answer, c.key_facts) or 0.0 for c in answerable for o in answerable if o.id != c.id
    ]
    echoed = [key_fact_recall(c.question, c.key_facts) or 0.0 for c in answerable]
    assert sum(other) / len(other) < 0.05
    assert sum(echoed) / len(echoed) < 0.15


def test_sample_cases_keeps_the_mix_of_kinds() -> None:
    from citedocs.eval.cases import Case, Evidence, sample_cases

    ev = (Evidence("docs/a.md", "A", "a", ""),)
    cases = [Case(f"a{i}", "q", "a", ev, "answerable", ()) for i in range(9)]
    cases += [Case(f"u{i}", "q", "", (), "unanswerable", ()) for i in range(4)]
    picked = sample_cases(cases, 3)
    assert [c.id for c in picked] == ["a0", "a3", "a6", "u0", "u3"]
    assert sample_cases(cases, 1) == cases
