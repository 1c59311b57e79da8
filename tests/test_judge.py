from __future__ import annotations

from citedocs.eval.judge import judge_messages, parse_verdict, relevant_window
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
