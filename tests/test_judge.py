from __future__ import annotations

from citedocs.eval.judge import Judge, copied_from, judge_messages, parse_verdict, relevant_window
from citedocs.eval.rejudge import judge_agreement


def test_verdicts_are_parsed_strictly() -> None:
    assert parse_verdict("Yes.") is True
    assert parse_verdict(" no") is False
    assert parse_verdict("Maybe") is None
    assert parse_verdict("yes and no") is None


def test_the_window_keeps_the_evidence_of_a_long_passage() -> None:
    filler = "Limits are set at the organization level. " * 60
    passage = filler + "Short bursts of requests at a high volume can surpass the rate limit. " + filler
    sentence = "Short bursts of requests can surpass the rate limit."
    window = relevant_window(passage, sentence, width=300)
    assert len(window) <= 300 and "Short bursts of requests" in window
    assert "Short bursts" in judge_messages(sentence, passage)[1]["content"]
    assert relevant_window("short", sentence) == "short"


def test_agreement_and_kappa_against_hand_grades() -> None:
    graded = [{"case": "a", "sentence": f"s{i}", "n": 1, "supported": i < 6} for i in range(8)]
    judged = [{"case": "a", "sentence": f"s{i}", "n": 1, "supported": i < 5} for i in range(8)]
    result = judge_agreement(judged, graded)
    assert result["pairs"] == 8 and result["agreement"] == 0.875
    assert 0 < result["kappa"] < 1
    assert judge_agreement([], graded) == {"pairs": 0}


PASSAGE = (
    "Limits are set at the organization level. You can see your organization's limits in Plans and Billing "
    "in the Claude Console. A rate of 60 requests per minute (RPM) may be enforced as 1 request per second."
)


def test_a_sentence_copied_from_its_passage_is_recognised() -> None:
    assert copied_from(
        "You can see your organization's limits in Plans and Billing in the Claude Console [1].", PASSAGE
    )
    assert copied_from("Limits are set at the organization level.[2]", PASSAGE)


def test_a_copy_with_a_changed_number_a_negation_or_new_words_is_not() -> None:
    assert not copied_from(
        "A rate of 60 requests per minute (RPM) may be enforced as 2 request per second.", PASSAGE
    )
    assert not copied_from(
        "You cannot see your organization's limits in Plans and Billing in the Claude Console.", PASSAGE
    )
    assert not copied_from(
        "Limits are set at the organization level, which keeps costs low and teams happy.", PASSAGE
    )
    assert not copied_from("Limits apply to organizations.", PASSAGE)
    assert not copied_from("Limits are set", PASSAGE)


class _CountingModel:
    """Speaks the ChatModel protocol; says "no" to everything and counts the calls."""

    def __init__(self) -> None:
        self.calls = 0

    async def complete(self, messages: object, *, max_tokens: int, temperature: float) -> object:
        self.calls += 1
        return type("Result", (), {"text": "no"})()


def test_the_judge_asks_the_model_only_about_sentences_not_copied() -> None:
    import asyncio

    model = _CountingModel()
    judge = Judge(model)  # type: ignore[arg-type]
    copied = asyncio.run(judge.supports("Limits are set at the organization level. [1]", PASSAGE))
    assert copied is True and model.calls == 0
    other = asyncio.run(judge.supports("Limits are set by each user for themselves. [1]", PASSAGE))
    assert other is False and model.calls == 1
