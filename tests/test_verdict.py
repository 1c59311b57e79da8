"""What a reader is shown of the model's reply (answer/verdict.py), one case per outcome."""

from __future__ import annotations

from citedocs.answer.prompt import refusal_sentence
from citedocs.answer.verdict import verdict
from citedocs.hits import Hit

LIMITS = "Rate limits are 50 requests per minute; a request over the limit gets HTTP 429."


def _hit(text: str) -> Hit:
    return Hit(
        path="/d/limits.md",
        source="/d",
        heading="",
        page=None,
        line_start=1,
        line_end=1,
        chunk_id="1",
        score=1.0,
        text=text,
    )


def test_a_supported_reply_is_kept_with_its_citations() -> None:
    checked = verdict(
        "The limit is 50 requests per minute [1].", [_hit(LIMITS)], "What is the limit?", follow_up=False
    )
    assert not checked.refused and checked.reason is None and not checked.asks_back
    assert checked.citations == [1]
    assert "50 requests per minute" in checked.answer


def test_a_reply_its_sources_do_not_hold_is_withheld_with_the_refusal_sentence() -> None:
    checked = verdict(
        "The limit is 9000 tokens per hour for enterprise tenants [1].",
        [_hit(LIMITS)],
        "What is the limit?",
        follow_up=False,
    )
    assert checked.refused and checked.reason
    assert checked.answer == refusal_sentence("en") and checked.citations == []


def test_the_models_refusal_is_a_refusal_without_a_withheld_reason() -> None:
    checked = verdict(refusal_sentence("en"), [_hit(LIMITS)], "What is the limit?", follow_up=False)
    assert checked.refused and checked.reason is None and checked.citations == []


def test_only_a_follow_up_may_ask_back() -> None:
    question_back = "Which limit do you mean, requests or tokens?"
    asked = verdict(question_back, [_hit(LIMITS)], "And that one?", follow_up=True)
    assert asked.asks_back and not asked.refused and asked.answer == question_back
    alone = verdict(question_back, [_hit(LIMITS)], "And that one?", follow_up=False)
    assert not alone.asks_back and alone.refused
