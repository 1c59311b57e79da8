"""Check an answer's citations against the passages it was given, and repair what the check disproves.

Citations are checked, not trusted. For each sentence, a fast lexical measure asks how much of its content
(numbers, identifiers, stemmed content words; see `terms`) the cited passages contain. A sentence whose
citations hold it keeps them (minus passages that add nothing); one that cites the wrong passage is moved to
the passage that holds it (the neighbour mis-citation askdocs found); an uncited sentence that a passage
clearly holds gets that citation; a sentence no passage holds is flagged, and in the delivered answer it ends
with UNVERIFIED_MARK, so a reader sees which claims the sources do not back. Every number in a sentence must
appear in its sources: "port 9090" is not supported by a passage that says "port 8080".
"""

from __future__ import annotations

import difflib
import itertools
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from citedocs.answer.polarity import states_the_opposite
from citedocs.answer.prompt import REFUSAL_SENTENCES
from citedocs.answer.sentences import Marker, find_markers, parse_citations, split_sentences, strip_markers
from citedocs.errors import InputError
from citedocs.hits import Hit
from citedocs.text.terms import Terms, coverage, extract_terms, union

__all__ = [
    "MIN_CONTRIBUTION",
    "SUPPORT_THRESHOLD",
    "UNVERIFIED_MARK",
    "CitationReport",
    "SentenceCheck",
    "check_citations",
    "could_be_refusal",
    "is_refusal",
    "is_wordless",
    "parse_citations",
    "repair_answer",
    "withheld_reason",
]

# A sentence is supported when its sources hold this weighted share of its content terms (numbers weigh 3,
# identifiers 2, words 1) and every one of its numbers. Sentences an LLM writes from a passage reuse its
# words; the rest is glue ("is used to", "you can"). Calibrated on claude-docs-qa reference answers (see
# the report of the change that set it): true evidence sections score a median ~0.9, the best *other*
# section ~0.5.
SUPPORT_THRESHOLD = 0.6
# an answer with fewer than this share of its checked sentences held by its sources is withheld (`withheld_reason`)
MIN_SUPPORTED = 0.5
# A cited passage that holds less than this share of a sentence adds nothing and its citation is dropped,
# unless it is needed with the others to reach SUPPORT_THRESHOLD.
MIN_CONTRIBUTION = 0.25
# When looking for the passages that hold a mis-cited or uncited sentence, combinations of up to this many.
MAX_SOURCES_PER_SENTENCE = 2
# How close (difflib ratio) an answer must be to a refusal sentence to count as that sentence.
REFUSAL_SIMILARITY = 0.8
# What the delivered answer shows after a sentence no passage supports (after the citations it kept).
UNVERIFIED_MARK = "[unverified]"
_NOTHING = Terms(frozenset(), frozenset(), frozenset())


@dataclass(slots=True)
class SentenceCheck:
    """The verdict on one sentence. `cited` is what the model wrote, `supported_by` what the check found.

    `checked` is False for sentences with no content to verify (headings, "Here is how:", the refusal);
    `supported` is then True. `support` is the share of the sentence's content held by `supported_by`, or,
    for an unsupported sentence, by the passages it cited (or the best single passage if it cited none).
    """

    sentence: str
    cited: list[int]
    supported_by: list[int]
    support: float
    repaired: bool
    supported: bool
    checked: bool
    start: int
    end: int
    kind: str = "text"
    markers: list[Marker] = field(default_factory=list, repr=False)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("markers")
        data["support"] = round(self.support, 3)
        return data


@dataclass(slots=True)
class CitationReport:
    """Citations of one answer: what it cites, what points at nothing, and each sentence's verdict."""

    answer: str
    source_count: int
    citations: list[int]
    original_citations: list[int]
    invalid_citations: list[int]
    sentences: list[SentenceCheck]

    @property
    def unsupported(self) -> list[SentenceCheck]:
        return [s for s in self.sentences if not s.supported]

    @property
    def repaired_count(self) -> int:
        return sum(s.repaired for s in self.sentences)

    @property
    def support_counts(self) -> tuple[int, int]:
        """(checked sentences that their (repaired) citations support, checked sentences)."""
        checked = [s for s in self.sentences if s.checked]
        return sum(s.supported for s in checked), len(checked)

    @property
    def supported_fraction(self) -> float:
        """Share of checked sentences that their (repaired) citations support; 1.0 when none is checked."""
        held, checked = self.support_counts
        return held / checked if checked else 1.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "citations": self.citations,
            "original_citations": self.original_citations,
            "invalid_citations": self.invalid_citations,
            "supported_fraction": round(self.supported_fraction, 3),
            "repaired": self.repaired_count,
            "sentences": [s.to_dict() for s in self.sentences],
        }


def _normalize_refusal(text: str) -> str:
    text = (
        strip_markers(text).lower().replace("’", "'").replace("cannot", "can't").replace("can not", "can't")
    )
    return " ".join(re.sub(r"[^\w' ]+", " ", text).split())


_REFUSALS_NORMALIZED = [_normalize_refusal(sentence) for sentence in REFUSAL_SENTENCES.values()]


def is_refusal(answer: str) -> bool:
    """True when the answer is a refusal sentence (in any language the prompt asks for), give or take case,
    punctuation and small rewording."""
    text = _normalize_refusal(answer)
    return bool(text) and any(_is_like(text, refusal) for refusal in _REFUSALS_NORMALIZED)


def could_be_refusal(text: str) -> bool:
    """True while a streamed answer could still become the refusal sentence: nothing but its start so far
    (or the whole sentence, with no more after it than `is_refusal` allows). The first words of an answer
    rule it out."""
    text = _normalize_refusal(text)
    return not text or any(
        r.startswith(text) or (text.startswith(r) and len(text) <= 2 * len(r)) for r in _REFUSALS_NORMALIZED
    )


def _is_like(text: str, refusal: str) -> bool:
    if len(text) > 2 * len(refusal):
        return False
    head = text[: len(refusal) + 10]
    return (
        text.startswith(refusal) or difflib.SequenceMatcher(None, refusal, head).ratio() >= REFUSAL_SIMILARITY
    )


def check_citations(answer: str, passages: Sequence[Hit]) -> CitationReport:
    """Verify every sentence of `answer` against `passages` (cited as [1]..[n]) and decide its sources."""
    count = len(passages)
    passage_terms = [extract_terms(f"{p.heading}\n{p.text}", keep_parts=True) for p in passages]
    markers = find_markers(answer)
    written = sorted({n for m in markers for n in m.numbers})
    invalid = [n for n in written if not 1 <= n <= count]
    sentences = []
    for span in split_sentences(answer):
        own = [m for m in markers if span.start <= m.start < span.end]
        text = answer[span.start : span.end]
        # a passage that states the opposite ("do not need" against "need") supports nothing it shares terms with
        held = [
            _NOTHING if states_the_opposite(strip_markers(text), f"{p.heading}\n{p.text}") else t
            for p, t in zip(passages, passage_terms, strict=True)
        ]
        sentences.append(_check_sentence(text, span.start, span.end, span.kind, own, held))
    used = sorted({n for s in sentences for n in _final_citations(s, count)})
    return CitationReport(
        answer=answer,
        source_count=count,
        citations=used,
        original_citations=[n for n in written if 1 <= n <= count],
        invalid_citations=invalid,
        sentences=sentences,
    )


def _check_sentence(
    text: str, start: int, end: int, kind: str, markers: list[Marker], passage_terms: list[Terms]
) -> SentenceCheck:
    cited = sorted({n for m in markers for n in m.numbers})
    valid = [n for n in cited if 1 <= n <= len(passage_terms)]
    terms = extract_terms(strip_markers(text).replace(UNVERIFIED_MARK, ""))

    def verdict(supported_by: list[int], support: float, supported: bool, checked: bool) -> SentenceCheck:
        final = supported_by if supported else valid
        return SentenceCheck(
            text, cited, supported_by, support, final != cited, supported, checked, start, end, kind, markers
        )

    if kind == "heading" or not terms or is_refusal(text):
        return verdict(valid, 1.0, True, False)
    if valid and _holds(terms, [passage_terms[n - 1] for n in valid]):
        kept = _needed(terms, valid, passage_terms)
        support = coverage(terms, union(passage_terms[n - 1] for n in kept))
        return verdict(kept, support, True, True)
    found = _best_sources(terms, passage_terms)
    if found is not None:
        support = coverage(terms, union(passage_terms[n - 1] for n in found))
        return verdict(found, support, True, True)
    if valid:
        support = coverage(terms, union(passage_terms[n - 1] for n in valid))
    else:
        support = max((coverage(terms, p) for p in passage_terms), default=0.0)
    return verdict([], support, False, True)


def _holds(terms: Terms, sources: list[Terms]) -> bool:
    present = union(sources)
    return terms.numbers <= present.numbers and coverage(terms, present) >= SUPPORT_THRESHOLD


def _needed(terms: Terms, cited: list[int], passage_terms: list[Terms]) -> list[int]:
    """The cited passages worth keeping: each that holds the sentence alone, else a smallest set that does."""
    alone = [n for n in cited if _holds(terms, [passage_terms[n - 1]])]
    if alone:
        return alone
    for size in range(1, len(cited) + 1):
        for combo in itertools.combinations(cited, size):
            if _holds(terms, [passage_terms[n - 1] for n in combo]) and all(
                coverage(terms, passage_terms[n - 1]) >= MIN_CONTRIBUTION for n in combo
            ):
                return list(combo)
    return cited


def _best_sources(terms: Terms, passage_terms: list[Terms]) -> list[int] | None:
    """The passages (one, else up to MAX_SOURCES_PER_SENTENCE) that best hold the sentence, if any do."""
    numbers = range(1, len(passage_terms) + 1)
    for size in range(1, MAX_SOURCES_PER_SENTENCE + 1):
        best: tuple[float, list[int]] | None = None
        for combo in itertools.combinations(numbers, size):
            chosen = [passage_terms[n - 1] for n in combo]
            if size > 1 and any(coverage(terms, t) < MIN_CONTRIBUTION for t in chosen):
                continue
            if _holds(terms, chosen):
                score = coverage(terms, union(chosen))
                if best is None or score > best[0]:
                    best = (score, list(combo))
        if best is not None:
            return best[1]
    return None


def _final_citations(check: SentenceCheck, count: int, keep_unverified: bool = True) -> list[int]:
    if check.supported:
        return check.supported_by
    return [n for n in check.cited if 1 <= n <= count] if keep_unverified else []


def repair_answer(
    answer: str, report: CitationReport, *, keep_unverified: bool = True, mark_unverified: bool = False
) -> str:
    """`answer` with each sentence's markers replaced by its verified sources.

    Invalid numbers are always removed. An unsupported sentence keeps the valid numbers the model gave
    (`keep_unverified`, the default: the report already flags it) or loses them; with `mark_unverified`
    (what AnswerService delivers) it also ends with UNVERIFIED_MARK, so the answer itself says so.
    """
    if answer != report.answer:
        raise InputError(
            "repair_answer needs the answer the report was made from.", "Run check_citations first."
        )
    pieces: list[str] = []
    last = 0
    for check in report.sentences:
        if check.kind == "code":
            continue
        wanted = _final_citations(check, report.source_count, keep_unverified)
        mark = mark_unverified and not check.supported
        if wanted == check.cited and not mark:
            continue
        pieces.append(answer[last : check.start])
        pieces.append(_rewrite(check.sentence, check.start, check.markers, wanted, mark=mark))
        last = check.end
    pieces.append(answer[last:])
    return "".join(pieces)


_TRAILING_RE = re.compile(r"[.!?:;]*[\"')”’*_]*$")


def _rewrite(
    sentence: str, offset: int, markers: list[Marker], numbers: list[int], *, mark: bool = False
) -> str:
    bare, last = [], 0
    for marker in markers:
        bare.append(sentence[last : marker.start - offset].rstrip(" \t"))
        last = marker.end - offset
    bare.append(sentence[last:])
    text = "".join(bare).rstrip()
    if mark:  # a delivered answer checked again is marked once
        text = text.replace(f" {UNVERIFIED_MARK}", "").replace(UNVERIFIED_MARK, "").rstrip()
    label = "".join(f"[{n}]" for n in numbers)
    if mark:
        label = f"{label} {UNVERIFIED_MARK}" if label else UNVERIFIED_MARK
    if not label:
        return text
    tail = _TRAILING_RE.search(text)
    cut = tail.start() if tail else len(text)
    return f"{text[:cut].rstrip()} {label}{text[cut:]}"


def is_wordless(answer: str) -> bool:
    """True when nothing but citation marks, punctuation or white space is left of `answer` ("[1][4]", "")."""
    return not any(ch.isalnum() for ch in strip_markers(answer))


def withheld_reason(report: CitationReport, min_supported: float = MIN_SUPPORTED) -> str | None:
    """Why an answer is not delivered, or None: it says nothing but citation marks, or fewer than
    `min_supported` of its checked sentences are held by its sources (then the refusal is sent and the
    model's words stay in `raw_answer`).

    Measured on claude-docs, every answered case of seven whole-passage runs of the 1.5B model (eval/baseline):
    answers to answerable questions had at least half of their checked sentences supported, the answers it made
    up for unanswerable ones ("How do I install Claude Code?": clone a repository, run `python server.py`)
    0.17-0.40. With 450-token evidence windows one answerable answer had 0.33.
    """
    if is_wordless(report.answer):
        # "[1][4]" was the 1.5B model's whole reply to an unanswerable Japanese question (answer-ja-5)
        said = "only citation marks" if report.answer.strip() else "nothing"
        return f"the model's answer held no words ({said}), so it was withheld"
    held, checked = report.support_counts
    if report.supported_fraction >= min_supported:
        return None
    return (
        f"only {held} of {checked} checked sentences of the model's answer are supported by the sources, "
        "so it was withheld (its words are in raw_answer)"
    )
