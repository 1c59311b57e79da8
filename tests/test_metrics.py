from __future__ import annotations

import math

import pytest

from citedocs.eval.metrics import (
    citation_precision,
    context_recall,
    correct_refusal,
    fact_found,
    faithfulness,
    file_mrr,
    file_name,
    file_ndcg_at_k,
    file_recall_at_k,
    invalid_citation_rate,
    key_fact_recall,
    mrr_at_k,
    ndcg_at_k,
    normalize_answer,
    normalize_heading,
    recall_at_k,
    section_recall_at_k,
    wrong_refusal,
)

STREAM = "/corpus/docs/en__api__messages-streaming.md"
EXAMPLES = "/corpus/docs/en__api__messages-examples.md"
ERRORS = "/corpus/docs/en__api__errors.md"


def test_file_name_takes_the_last_segment_of_paths_and_urls() -> None:
    assert file_name("/a/b/docs/x.md") == "x.md"
    assert file_name("docs/x.md") == "x.md"
    assert file_name("C:\\corpus\\docs\\x.md") == "x.md"
    assert file_name("https://docs.example.com/en/api/errors#http-errors") == "errors"
    assert file_name("https://docs.example.com/en/api/errors/?v=1") == "errors"


def test_normalize_heading_ignores_case_quotes_and_punctuation() -> None:
    assert normalize_heading("How to prefill Claude’s response") == normalize_heading(
        "how to prefill claude's RESPONSE"
    )
    assert normalize_heading("June 20th, 2024") == "june 20th 2024"
    assert normalize_heading("  TTFT (Time to first token) ") == "ttft time to first token"


def test_file_recall_counts_distinct_evidence_files() -> None:
    ranked = [(STREAM, "A"), (STREAM, "B"), (ERRORS, "C")]
    evidence = ["docs/en__api__messages-streaming.md", "docs/en__api__errors.md"]
    assert file_recall_at_k(ranked, evidence, 1) == 0.5
    assert file_recall_at_k(ranked, evidence, 2) == 0.5
    assert file_recall_at_k(ranked, evidence, 3) == 1.0
    assert file_recall_at_k([STREAM, ERRORS], evidence, 5) == 1.0
    assert file_recall_at_k([], evidence, 5) == 0.0
    with pytest.raises(ValueError):
        file_recall_at_k(ranked, evidence, 0)
    with pytest.raises(ValueError):
        file_recall_at_k(ranked, [], 5)


def test_section_recall_matches_any_heading_path_element_in_the_same_file() -> None:
    evidence = [("docs/en__api__messages-examples.md", "Putting words in Claude’s mouth")]
    nested = (EXAMPLES, "Messages Examples > Putting words in Claude's mouth > Example")
    assert section_recall_at_k([nested], evidence, 1) == 1.0
    assert section_recall_at_k([(EXAMPLES, "Putting words in Claude's mouth")], evidence, 1) == 1.0
    # Same heading in another file is not the evidence section.
    assert section_recall_at_k([(STREAM, "Putting words in Claude's mouth")], evidence, 5) == 0.0
    # A heading that merely contains the words is not equal to them.
    assert section_recall_at_k([(EXAMPLES, "More on putting words in Claude's mouth")], evidence, 5) == 0.0
    ranked = [(EXAMPLES, "Basic request and response"), nested]
    assert section_recall_at_k(ranked, evidence, 1) == 0.0
    assert section_recall_at_k(ranked, evidence, 2) == 1.0
    two = [*evidence, ("docs/en__api__messages-examples.md", "Basic request and response")]
    assert section_recall_at_k(ranked, two, 1) == 0.5


def test_context_recall_by_file_and_by_section() -> None:
    evidence = [
        ("docs/en__api__errors.md", "HTTP errors"),
        ("docs/en__api__messages-streaming.md", "Error events"),
    ]
    context = [(ERRORS, "Errors > HTTP errors"), (EXAMPLES, "Basic request and response")]
    assert context_recall(context, evidence) == 0.5
    assert context_recall(context, evidence, level="section") == 0.5
    assert context_recall([], evidence) == 0.0
    assert context_recall([(ERRORS, "Errors")], evidence, level="section") == 0.0
    with pytest.raises(ValueError):
        context_recall(context, evidence, level="page")


def test_file_mrr_is_the_reciprocal_rank_of_the_first_evidence_file() -> None:
    ranked = [EXAMPLES, EXAMPLES, STREAM, ERRORS]
    assert file_mrr(ranked, ["en__api__messages-streaming.md", "en__api__errors.md"]) == pytest.approx(1 / 3)
    assert file_mrr(ranked, ["en__api__errors.md"], k=3) == 0.0
    assert file_mrr(ranked, ["missing.md"]) == 0.0


def test_file_ndcg_counts_each_relevant_file_once() -> None:
    assert file_ndcg_at_k([STREAM, ERRORS], ["en__api__messages-streaming.md"], 10) == 1.0
    assert file_ndcg_at_k([EXAMPLES, STREAM], ["en__api__messages-streaming.md"], 10) == pytest.approx(
        1 / math.log2(3)
    )
    many_chunks = [STREAM, STREAM, STREAM]
    assert file_ndcg_at_k(many_chunks, ["en__api__messages-streaming.md"], 10) == 1.0
    two = ["en__api__messages-streaming.md", "en__api__errors.md"]
    assert file_ndcg_at_k(many_chunks, two, 10) == pytest.approx(1 / (1 + 1 / math.log2(3)))
    assert file_ndcg_at_k([EXAMPLES], two, 10) == 0.0


def test_graded_ndcg_matches_a_hand_computed_value() -> None:
    qrels = {"a": 2, "b": 1, "c": 0}
    dcg = 1 / math.log2(2) + 0 + 2 / math.log2(4)
    idcg = 2 / math.log2(2) + 1 / math.log2(3)
    assert ndcg_at_k(["b", "x", "a"], qrels, 10) == pytest.approx(dcg / idcg)
    assert ndcg_at_k(["a", "b"], qrels, 10) == pytest.approx(1.0)
    assert ndcg_at_k(["a", "a", "b"], qrels, 10) == pytest.approx((2 + 1 / math.log2(4)) / idcg)
    assert ndcg_at_k(["c", "x"], qrels, 10) == 0.0
    assert ndcg_at_k(["a"], {"a": 0}, 10) == 0.0
    assert ndcg_at_k(["b", "a"], qrels, 1) == pytest.approx(1 / 2)


def test_recall_and_mrr_over_qrels() -> None:
    qrels = {"a": 1, "b": 2, "c": 0}
    assert recall_at_k(["x", "a", "c"], qrels, 2) == 0.5
    assert recall_at_k(["b", "a"], qrels, 100) == 1.0
    assert recall_at_k(["a"], {}, 10) == 0.0
    assert mrr_at_k(["c", "x", "b"], qrels, 10) == pytest.approx(1 / 3)
    assert mrr_at_k(["c", "x", "b"], qrels, 2) == 0.0


def test_normalize_answer_removes_formatting_differences() -> None:
    assert normalize_answer("It costs $1,000,000.") == normalize_answer("it costs 1000000")
    assert normalize_answer("5MB per image") == normalize_answer("5 mb per image")
    assert normalize_answer("Claude’s  “reply”") == "claude s reply"
    assert normalize_answer("89.01% and $0.0004") == "89.01 and 0.0004"
    assert normalize_answer("missing \\n\\nHuman: turn") == "missing human turn"
    assert normalize_answer("June 20, 2024") == "june 20 2024"


def test_key_fact_recall_is_the_share_of_facts_contained() -> None:
    facts = ["89.01%", "1.61 seconds", "$0.0004"]
    answer = "Accuracy was 89.01 %, the P95 latency 1.61 s and the cost $0.0004 a ticket."
    assert key_fact_recall(answer, facts) == pytest.approx(2 / 3)
    assert key_fact_recall("ACCURACY 89.01%, 1.61 SECONDS, $0.0004", facts) == 1.0


def test_key_fact_numbers_do_not_match_inside_other_numbers() -> None:
    assert key_fact_recall("released in 2024", ["20"]) == 0.0
    assert key_fact_recall("it took 1.61 seconds", ["1"]) == 0.0
    assert key_fact_recall("it took 21 seconds", ["1"]) == 0.0
    assert key_fact_recall("set max_tokens to 1.", ["max_tokens", "1"]) == 1.0
    assert key_fact_recall("up to 20 images", ["20"]) == 1.0
    assert key_fact_recall("Found 1,000 items", ["1000"]) == 1.0


def test_key_facts_match_through_the_analyzer_and_the_literal_matcher_is_kept() -> None:
    assert fact_found("The client retried the request.", "retries requests")
    assert not fact_found("The client retried the request.", "retries requests", "literal")
    assert key_fact_recall("The client retried the request.", ["retries requests"], matcher="literal") == 0.0
    assert key_fact_recall("The client retried the request.", ["retries requests"]) == 1.0
    assert not fact_found("requests were retried", "retries requests")  # in a row, in order
    assert not fact_found("released in 2024, version 20.5", "20")
    # Japanese: words, no spaces needed
    assert fact_found("重要度は wishlist にします。", "重要度")
    assert fact_found("指定した日数が過ぎると通常の incoming に移されます", "日数が過ぎる")
    assert not fact_found("バグを報告します", "重要度")


def test_key_fact_words_match_at_a_word_start() -> None:
    assert key_fact_recall("It finds edge cases.", ["edge case"]) == 1.0
    assert key_fact_recall("a hedge case", ["edge case"]) == 0.0
    assert key_fact_recall("use the input_json_delta type", ["input_json_delta"]) == 1.0
    assert key_fact_recall("use the input json delta type", ["input_json_delta"]) == 0.0


def test_a_japanese_key_fact_may_start_anywhere_in_a_run_of_text() -> None:
    # no spaces between Japanese words; SudachiPy cuts 冪 from 等 in the sentence but not in the fact alone
    answer = "メンテナスクリプトは冪等でなければなりません。"
    assert key_fact_recall(answer, ["冪等"], matcher="literal") == 1.0
    assert key_fact_recall(answer, ["冪等"]) == 1.0
    assert key_fact_recall("changes ファイルは最後に転送する", ["最後に転送"], matcher="literal") == 1.0
    assert key_fact_recall("ログは削除されます", ["冪等"]) == 0.0
    assert key_fact_recall("a hedge case", ["edge case"]) == 0.0  # Latin words still start at a boundary


def test_key_fact_recall_scores_refusals_zero_and_has_no_value_without_facts() -> None:
    assert key_fact_recall("529 overloaded_error", ["529"], refused=True) == 0.0
    assert key_fact_recall("anything", []) is None


def test_refusal_outcomes_by_kind() -> None:
    assert correct_refusal("unanswerable", True) == 1.0
    assert correct_refusal("off_topic", False) == 0.0
    assert correct_refusal("answerable", True) is None
    assert wrong_refusal("answerable", True) == 1.0
    assert wrong_refusal("answerable", False) == 0.0
    assert wrong_refusal("off_topic", True) is None


def test_invalid_citation_rate() -> None:
    assert invalid_citation_rate([1, 2, 7], [1, 2, 3]) == pytest.approx(1 / 3)
    assert invalid_citation_rate([], [1, 2]) == 0.0
    assert invalid_citation_rate(["c1", "zz"], ["c1"]) == 0.5


def test_citation_precision_and_faithfulness_from_judgements() -> None:
    judgements = [[True, False], [True], []]
    assert citation_precision(judgements) == pytest.approx(2 / 3)
    assert faithfulness(judgements) == pytest.approx(2 / 3)
    assert faithfulness([[False, False], [True]]) == 0.5
    assert citation_precision([[], []]) is None
    assert faithfulness([[], []]) == 0.0
    assert faithfulness([]) is None
