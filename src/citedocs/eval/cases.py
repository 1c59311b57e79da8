"""Evaluation cases: the shared labelled questions merged with our own overlay files.

A case file is JSON Lines. A record with a new `id` defines a case (`question` required; `answer`, `evidence`,
`kind`, `key_facts`, `note` optional). A record whose `id` was defined in any file and that carries no
`question` is an overlay: it sets `key_facts` and/or `kind` on that case, so labels can live in our repository
while the shared questions stay where they are. Files may come in any order.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from citedocs.errors import InputError, NotFoundError

__all__ = ["KINDS", "Case", "CaseKind", "Evidence", "cases_digest", "load_cases"]

CaseKind = Literal["answerable", "unanswerable", "off_topic"]
KINDS: tuple[CaseKind, ...] = ("answerable", "unanswerable", "off_topic")

_CASE_FIELDS = {"id", "question", "answer", "evidence", "kind", "key_facts", "note"}
_OVERLAY_FIELDS = {"id", "kind", "key_facts", "note"}
_EVIDENCE_FIELDS = {"file", "heading", "anchor", "chunk_link"}


@dataclass(frozen=True, slots=True)
class Evidence:
    """One section an answer lives in; `file` is relative to the corpus folder's parent (`docs/NAME.md`)."""

    file: str
    heading: str
    anchor: str = ""
    chunk_link: str = ""

    @property
    def file_name(self) -> str:
        """The bare file name, which is what retrieval results are matched on."""
        return self.file.replace("\\", "/").rsplit("/", 1)[-1]


@dataclass(frozen=True, slots=True)
class Case:
    """One labelled question."""

    id: str
    question: str
    answer: str = ""
    evidence: tuple[Evidence, ...] = ()
    kind: CaseKind = "answerable"
    key_facts: tuple[str, ...] = ()

    @property
    def answerable(self) -> bool:
        return self.kind == "answerable"

    @property
    def evidence_files(self) -> tuple[str, ...]:
        """Distinct evidence file names, in label order."""
        return tuple(dict.fromkeys(e.file_name for e in self.evidence))

    @property
    def evidence_sections(self) -> tuple[tuple[str, str], ...]:
        """Distinct (file name, heading) pairs, in label order."""
        return tuple(dict.fromkeys((e.file_name, e.heading) for e in self.evidence))


def load_cases(*paths: str | Path) -> list[Case]:
    """Read and merge case files; cases keep the order in which they were first defined."""
    if not paths:
        raise InputError("No case files given.", "Pass at least one cases.jsonl file.")
    cases: dict[str, Case] = {}
    where: dict[str, str] = {}
    overlays: list[tuple[str, dict[str, Any]]] = []
    for path in paths:
        for place, record in _records(Path(path)):
            case_id = record["id"]
            if "question" in record:
                if case_id in cases:
                    raise InputError(
                        f"{place}: case {case_id!r} is already defined at {where[case_id]}.",
                        "Give the new case another id, or drop `question` to make the line an overlay.",
                    )
                cases[case_id] = _case(place, record)
                where[case_id] = place
            else:
                overlays.append((place, record))
    for place, record in overlays:
        case_id = record["id"]
        if case_id not in cases:
            raise InputError(
                f"{place}: overlay for unknown case {case_id!r}.",
                "Check the id, or pass the file that defines the case as well.",
            )
        cases[case_id] = _apply_overlay(place, cases[case_id], record)
    return list(cases.values())


def cases_digest(cases: Iterable[Case]) -> str:
    """A stable hash of the ids and questions, independent of order: results must match it exactly."""
    pairs = sorted((case.id, case.question) for case in cases)
    text = json.dumps(pairs, ensure_ascii=False, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _records(path: Path) -> Iterable[tuple[str, dict[str, Any]]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise NotFoundError(
            f"Case file {path} does not exist.", "Check the path passed with --cases."
        ) from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        place = f"{path}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"{place}: not valid JSON ({exc.msg}).", "Write one JSON object per line."
            ) from None
        if not isinstance(record, dict):
            raise InputError(f"{place}: expected a JSON object.", "Write one JSON object per line.")
        case_id = record.get("id")
        if not isinstance(case_id, str) or not case_id.strip():
            raise InputError(f"{place}: missing or empty `id`.", 'Give every line an "id" string.')
        yield place, record


def _case(place: str, record: dict[str, Any]) -> Case:
    _check_fields(place, record, _CASE_FIELDS)
    question = _text(place, record, "question", required=True)
    kind = _kind(place, record.get("kind", "answerable"))
    evidence = _evidence(place, record.get("evidence", []))
    key_facts = _key_facts(place, record.get("key_facts", []))
    if kind == "answerable" and not evidence:
        raise InputError(
            f"{place}: answerable case {record['id']!r} has no evidence.",
            'List the sections that hold the answer in "evidence", or set "kind" to unanswerable.',
        )
    if kind != "answerable" and (evidence or key_facts):
        raise InputError(
            f"{place}: {kind} case {record['id']!r} lists evidence or key facts.",
            "Only answerable cases carry evidence and key_facts; remove them or change the kind.",
        )
    return Case(
        id=record["id"],
        question=question,
        answer=_text(place, record, "answer", required=False),
        evidence=evidence,
        kind=kind,
        key_facts=key_facts,
    )


def _apply_overlay(place: str, case: Case, record: dict[str, Any]) -> Case:
    _check_fields(place, record, _OVERLAY_FIELDS)
    if "kind" in record:
        case = replace(case, kind=_kind(place, record["kind"]))
    if "key_facts" in record:
        case = replace(case, key_facts=_key_facts(place, record["key_facts"]))
    if case.key_facts and not case.answerable:
        raise InputError(
            f"{place}: key facts given for {case.kind} case {case.id!r}.",
            "Key facts only apply to answerable cases.",
        )
    return case


def _check_fields(place: str, record: dict[str, Any], allowed: set[str]) -> None:
    unknown = sorted(set(record) - allowed)
    if unknown:
        raise InputError(
            f"{place}: unknown field(s) {', '.join(unknown)}.",
            f"Allowed here: {', '.join(sorted(allowed))} (an overlay line has no `question`).",
        )


def _text(place: str, record: dict[str, Any], name: str, required: bool) -> str:
    value = record.get(name, "")
    if not isinstance(value, str) or (required and not value.strip()):
        raise InputError(f"{place}: `{name}` must be a non-empty string.", f'Set "{name}" to text.')
    return value


def _kind(place: str, value: object) -> CaseKind:
    for kind in KINDS:
        if value == kind:
            return kind
    raise InputError(f"{place}: unknown kind {value!r}.", f"Use one of: {', '.join(KINDS)}.")


def _key_facts(place: str, value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(f, str) and f.strip() for f in value):
        raise InputError(
            f"{place}: `key_facts` must be a list of non-empty strings.", 'e.g. "key_facts": ["529"]'
        )
    return tuple(value)


def _evidence(place: str, value: object) -> tuple[Evidence, ...]:
    if not isinstance(value, list):
        raise InputError(
            f"{place}: `evidence` must be a list.", 'e.g. [{"file": "docs/a.md", "heading": "H"}]'
        )
    items: list[Evidence] = []
    for item in value:
        if not isinstance(item, dict) or set(item) - _EVIDENCE_FIELDS:
            raise InputError(
                f"{place}: each evidence entry must be an object with {', '.join(sorted(_EVIDENCE_FIELDS))}.",
                'e.g. {"file": "docs/a.md", "heading": "Install"}',
            )
        fields = {name: item.get(name, "") for name in _EVIDENCE_FIELDS}
        if (
            not all(isinstance(v, str) for v in fields.values())
            or not fields["file"]
            or not fields["heading"]
        ):
            raise InputError(
                f"{place}: evidence needs non-empty `file` and `heading` strings.",
                'e.g. {"file": "docs/a.md", "heading": "Install"}',
            )
        items.append(Evidence(**fields))
    return tuple(items)


def sample_cases(cases: Sequence[Case], every: int) -> list[Case]:
    """Every `every`-th case of each kind, in file order: a smaller set with the same mix, for repeated runs."""
    seen: dict[str, int] = {}
    out = []
    for case in cases:
        n = seen.get(case.kind, 0)
        seen[case.kind] = n + 1
        if n % every == 0:
            out.append(case)
    return out
