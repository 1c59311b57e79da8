"""answer/sentences.py: where a sentence of an answer or a passage ends (more cases in test_citations.py)."""

from __future__ import annotations

from citedocs.answer.sentences import split_sentences


def _split(text: str, headings: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    return [(text[s.start : s.end], s.kind) for s in split_sentences(text, headings)]


def test_a_period_and_a_space_before_japanese_end_the_sentence() -> None:
    text = "We prefer the closes: #XXX syntax. 歴史的に、NMU は fixed とタグがされてきました。同じことが言えます。"
    assert _split(text) == [
        ("We prefer the closes: #XXX syntax.", "text"),
        ("歴史的に、NMU は fixed とタグがされてきました。", "text"),
        ("同じことが言えます。", "text"),
    ]
    # English keeps its rule: a lower-case word after the period goes on with the sentence
    assert _split("Set it to e.g. five. then restart.") == [("Set it to e.g. five. then restart.", "text")]


def test_a_plain_line_that_is_one_of_the_passages_headings_is_a_heading() -> None:
    ja = "5.8.4. 新規アップロードでバグがクローズされる時\nバグを閉じるのはメンテナの責任です。"
    path = ("5. パッケージの取扱い方", "5.8.4. 新規アップロードでバグがクローズされる時")
    assert _split(ja, path) == [
        ("5.8.4. 新規アップロードでバグがクローズされる時", "heading"),
        ("バグを閉じるのはメンテナの責任です。", "text"),
    ]
    assert _split(ja) == [(ja, "text")]  # without the heading path it is glued to the sentence after it
    assert _split("4.6.5. Release names\nDebian 12 is bookworm.") == [
        ("4.6.5. Release names\nDebian 12 is bookworm.", "text")
    ]
    en = "Rate limits\nThe default is 50 requests per minute.\nRate limits apply per key."
    assert _split(en, ("API", "Rate limits")) == [
        ("Rate limits", "heading"),
        ("The default is 50 requests per minute.", "text"),
        ("Rate limits apply per key.", "text"),
    ]
    assert _split("## Rate limits\nText.", ("Rate limits",))[0] == ("Rate limits", "heading")
