"""Citation parsing, sentence splitting, support checking and repair on realistic answers."""

from __future__ import annotations

import pytest

from citedocs.answer.citations import (
    check_citations,
    is_refusal,
    parse_citations,
    repair_answer,
    withheld_reason,
)
from citedocs.answer.prompt import REFUSAL_SENTENCE
from citedocs.answer.sentences import split_sentences
from citedocs.errors import InputError
from citedocs.hits import Hit

PASSAGES = [
    (
        "server.md",
        "Serving",
        "citedocs serve starts the HTTP API on 127.0.0.1, port 8080 by default. Use --port to change it.",
    ),
    (
        "llm.md",
        "Local model",
        "Set CITEDOCS_LLM_GGUF to a GGUF file and citedocs starts llama-server itself. On two CPU cores the "
        "1.5B model writes about 13 tokens per second.",
    ),
    (
        "indexing.md",
        "Reindexing",
        "Reindexing skips files whose mtime and size are unchanged, then compares SHA-256 hashes, so a "
        "no-change reindex of 200 files takes 0.03 seconds.",
    ),
]


def passages() -> list[Hit]:
    return [
        Hit(f"c{i}", f"/docs/{p}", "/docs", h, None, 1, 9, 0.1, t) for i, (p, h, t) in enumerate(PASSAGES)
    ]


def only(answer: str):  # type: ignore[no-untyped-def]
    report = check_citations(answer, passages())
    assert len(report.sentences) == 1
    return report, report.sentences[0]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("A [1]. B [2, 3].", [1, 2, 3]),
        ("A [1][3].", [1, 3]),
        ("A [2-4].", [2, 3, 4]),
        ("A [Source 2] and [source 5].", [2, 5]),
        ("Use `items[0]` here [1].", [1]),
        ("```\nx = a[7]\n```\nDone [2].", [2]),
        ("No citations at all.", []),
    ],
)
def test_parse_citations(text: str, expected: list[int]) -> None:
    assert parse_citations(text) == expected


def test_split_sentences_survives_abbreviations_decimals_code_and_lists() -> None:
    answer = (
        "Claude 3.5 Sonnet costs $3 per million tokens, e.g. for input [1]. Call `client.messages.create()` "
        "to use it.[2] Dr. Smith wrote v1.2.3 [1-2].\n\n## Setup\n- Install with `pip install x` [3]\n"
        "1. Set KEY. Then run it [2]."
    )
    texts = [(answer[s.start : s.end], s.kind) for s in split_sentences(answer)]
    assert texts == [
        ("Claude 3.5 Sonnet costs $3 per million tokens, e.g. for input [1].", "text"),
        ("Call `client.messages.create()` to use it.[2]", "text"),
        ("Dr. Smith wrote v1.2.3 [1-2].", "text"),
        ("Setup", "heading"),
        ("Install with `pip install x` [3]", "text"),
        ("Set KEY.", "text"),
        ("Then run it [2].", "text"),
    ]


def test_correct_citation_is_kept() -> None:
    report, check = only("citedocs serve listens on port 8080 by default [1].")
    assert check.supported and check.supported_by == [1] and not check.repaired and check.support >= 0.8
    assert report.citations == [1] and report.invalid_citations == []
    assert repair_answer(report.answer, report) == report.answer


def test_neighbour_miscitation_is_repaired() -> None:
    answer = "A no-change reindex of 200 files takes 0.03 seconds [2]."
    report, check = only(answer)
    assert check.cited == [2] and check.supported_by == [3] and check.repaired and check.supported
    assert repair_answer(answer, report) == "A no-change reindex of 200 files takes 0.03 seconds [3]."
    assert report.citations == [3] and report.original_citations == [2]


def test_out_of_range_citation_is_invalid_and_removed() -> None:
    answer = "Set CITEDOCS_LLM_GGUF to a GGUF file and citedocs starts llama-server [2][9]."
    report, check = only(answer)
    assert report.invalid_citations == [9] and check.supported_by == [2] and check.repaired
    assert repair_answer(answer, report).endswith("llama-server [2].")


def test_uncited_sentence_gets_the_passage_that_holds_it() -> None:
    answer = "Reindexing compares SHA-256 hashes when mtime and size are unchanged."
    report, check = only(answer)
    assert check.cited == [] and check.supported_by == [3] and check.repaired
    assert (
        repair_answer(answer, report)
        == "Reindexing compares SHA-256 hashes when mtime and size are unchanged [3]."
    )


def test_unsupported_sentence_is_flagged_and_keeps_its_valid_citation() -> None:
    answer = "citedocs encrypts the index with AES-256 and rotates keys weekly [1]."
    report, check = only(answer)
    assert not check.supported and check.supported_by == [] and not check.repaired and check.support < 0.6
    assert report.unsupported == [check] and report.supported_fraction == 0.0
    assert repair_answer(answer, report) == answer
    assert repair_answer(answer, report, keep_unverified=False) == (
        "citedocs encrypts the index with AES-256 and rotates keys weekly."
    )


def test_unsupported_sentence_is_marked_once_and_the_mark_is_not_content() -> None:
    answer = "citedocs serve listens on port 8080 by default [1]. It rotates keys weekly [1]."
    report = check_citations(answer, passages())
    marked = repair_answer(answer, report, mark_unverified=True)
    assert (
        marked
        == "citedocs serve listens on port 8080 by default [1]. It rotates keys weekly [1] [unverified]."
    )
    again = check_citations(marked, passages())
    assert [(s.supported, round(s.support, 3)) for s in again.sentences] == [
        (s.supported, round(s.support, 3)) for s in report.sentences
    ]
    assert repair_answer(marked, again, mark_unverified=True) == marked
    uncited = "It rotates keys weekly."
    assert repair_answer(uncited, check_citations(uncited, passages()), mark_unverified=True) == (
        "It rotates keys weekly [unverified]."
    )


def test_numbers_must_match() -> None:
    _, check = only("citedocs serve listens on port 9090 by default [1].")
    assert not check.supported and check.supported_by == []


def test_irrelevant_extra_citation_is_dropped() -> None:
    answer = "The 1.5B model writes about 13 tokens per second on two CPU cores [1][2]."
    report, check = only(answer)
    assert check.supported_by == [2] and check.repaired
    assert (
        repair_answer(answer, report)
        == "The 1.5B model writes about 13 tokens per second on two CPU cores [2]."
    )


def test_sentence_needing_two_sources_keeps_both() -> None:
    answer = "citedocs serve uses port 8080 and the 1.5B model writes 13 tokens per second [1][2]."
    _, check = only(answer)
    assert check.supported and check.supported_by == [1, 2] and not check.repaired


def test_multi_sentence_answer_with_a_list() -> None:
    answer = (
        "To run citedocs with a local model:\n"
        "- Set CITEDOCS_LLM_GGUF to a GGUF file [1]\n"
        "- citedocs then starts llama-server itself [2]\n"
        "The API listens on port 8080 [1]."
    )
    report = check_citations(answer, passages())
    verdicts = [(s.cited, s.supported_by, s.checked) for s in report.sentences]
    assert verdicts == [([], [2], True), ([1], [2], True), ([2], [2], True), ([1], [1], True)]
    repaired = repair_answer(answer, report)
    assert repaired.startswith("To run citedocs with a local model [2]:\n")
    assert "- Set CITEDOCS_LLM_GGUF to a GGUF file [2]\n" in repaired
    assert repaired.endswith("The API listens on port 8080 [1].")
    assert report.citations == [1, 2]


def test_refusal_is_not_checked() -> None:
    report = check_citations(REFUSAL_SENTENCE, passages())
    assert report.sentences[0].checked is False and report.supported_fraction == 1.0


@pytest.mark.parametrize(
    "answer",
    [
        REFUSAL_SENTENCE,
        "I can't answer that from the indexed documents",
        "I cannot answer that from the indexed documents.",
        "I can’t answer this from the indexed documents.",
        "  i can't answer that from the indexed documents. [1]",
    ],
)
def test_is_refusal_tolerates_small_variations(answer: str) -> None:
    assert is_refusal(answer)


@pytest.mark.parametrize(
    "answer",
    [
        "citedocs serve listens on port 8080 [1].",
        "",
        "I can answer that: the port is 8080 from the documents [1].",
    ],
)
def test_is_refusal_rejects_answers(answer: str) -> None:
    assert not is_refusal(answer)


def test_repair_needs_the_reported_answer() -> None:
    report = check_citations("A [1].", passages())
    with pytest.raises(InputError):
        repair_answer("B [1].", report)


def test_withheld_reason_counts_checked_sentences_only() -> None:
    passages = [
        Hit(
            "c0",
            "/docs/server.md",
            "/docs",
            "Serving",
            None,
            1,
            9,
            0.1,
            "The server listens on port 8765 by default. The default limit is 4 answers at once.",
        )
    ]
    one_of_three = check_citations(
        "It is written in Rust [1]. It needs a GPU [1]. The server listens on port 8765 by default [1].",
        passages,
    )
    reason = withheld_reason(one_of_three, 0.5)
    assert reason is not None and reason.startswith("only 1 of 3 checked sentences ")
    assert "raw_answer" in reason
    assert withheld_reason(one_of_three, 0.0) is None
    half = check_citations("It needs a GPU [1]. The server listens on port 8765 by default [1].", passages)
    assert withheld_reason(half, 0.5) is None  # half held is delivered, the other half marked unverified
    assert withheld_reason(half, 0.6) is not None
    nothing_to_check = check_citations("Here is how:", passages)
    assert withheld_reason(nothing_to_check, 0.5) is None
    for wordless in ("[1][4]", "[1]. [1]", "", " \n"):
        reason = withheld_reason(check_citations(wordless, passages), 0.0)
        assert reason is not None and "held no words" in reason, wordless
    assert withheld_reason(check_citations("8765 [1]", passages), 0.5) is None  # a number is a word here
