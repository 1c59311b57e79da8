"""Which retrieved hits the model reads: links left out, and passages that repeat a better one dropped."""

from __future__ import annotations

from citedocs.answer.passages import passages, repeats
from citedocs.hits import Hit


def hit(text: str, n: int, kind: str = "passage") -> Hit:
    return Hit(
        chunk_id=str(n),
        path=f"doc{n}.md",
        source="docs",
        heading="",
        page=None,
        line_start=1,
        line_end=3,
        score=1.0 / n,
        text=text,
        snippet="",
        kind=kind,
    )  # type: ignore[arg-type]


LIMITS = "View your organization's rate limits in the Rate Limits tab of the Claude Console."
RENDERED = "Rate Limits tab: view your organization's rate limits in the Claude Console"
BATCHES = "Batch requests cost 50% of the standard price and finish within 24 hours."


def test_a_passage_the_one_above_already_says_is_dropped_and_the_order_kept() -> None:
    hits = [hit(LIMITS, 1), hit(BATCHES, 2), hit(RENDERED, 3)]
    assert [h.chunk_id for h in passages(hits, 5, overlap=0.8)] == ["1", "2"]
    assert repeats(hits, 0.8) == [2]


def test_overlap_zero_keeps_every_passage_and_links_are_never_passages() -> None:
    hits = [hit(LIMITS, 1), hit("Rate limits page", 2, kind="link"), hit(RENDERED, 3), hit(BATCHES, 4)]
    assert [h.chunk_id for h in passages(hits, 5)] == ["1", "3", "4"]
    assert [h.chunk_id for h in passages(hits, 2)] == ["1", "3"]


def test_k_counts_before_dropping_so_a_repeat_is_not_replaced() -> None:
    hits = [hit(LIMITS, 1), hit(RENDERED, 2), hit(BATCHES, 3)]
    assert [h.chunk_id for h in passages(hits, 2, overlap=0.8)] == ["1"]


def test_a_passage_that_adds_a_number_or_a_name_is_not_a_repeat() -> None:
    more = LIMITS + " Tier 4 allows 4,000 requests per minute on claude-3-haiku-20240307."
    assert repeats([hit(LIMITS, 1), hit(more, 2)], 0.8) == []
    # the longer one first: the shorter says nothing it does not
    assert repeats([hit(more, 1), hit(LIMITS, 2)], 0.8) == [1]


def test_a_repeat_of_a_dropped_passage_is_judged_against_what_was_kept() -> None:
    assert repeats([hit(LIMITS, 1), hit(RENDERED, 2), hit(RENDERED + ".", 3)], 0.8) == [1, 2]


def test_japanese_passages_are_compared_by_their_words() -> None:
    first = "レート制限はコンソールのレート制限タブで確認できます。組織ごとに上限が決まっています。"
    copy = "組織ごとに上限が決まっています。レート制限はコンソールのレート制限タブで確認できます。"
    other = "バッチ処理は標準料金の半額で、二十四時間以内に完了します。"
    assert repeats([hit(first, 1), hit(other, 2), hit(copy, 3)], 0.8) == [2]


def test_a_passage_without_content_terms_is_never_a_repeat() -> None:
    assert repeats([hit(LIMITS, 1), hit("---", 2), hit("", 3)], 0.8) == []
