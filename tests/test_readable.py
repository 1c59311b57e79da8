"""The evidence event's sentences made readable on the server (pure), so every client reads them clean."""

from __future__ import annotations

import pytest

from citedocs.answer.readable import readable_sentence


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("## Install the **server** now", "Install the server now"),
        ("| Port | 8765 | the HTTP API |", "Port · 8765 · the HTTP API"),
        ("- **Note**: the limit is 50 items.", "Note: the limit is 50 items."),
        ("> It is __very important__ to back up first.", "It is very important to back up first."),
        ("Set `max_tokens` to **529** and retry.", "Set max_tokens to 529 and retry."),
        ("It   listens\n  on port 8765 by default.", "It listens on port 8765 by default."),
        ("### 5.8. バグの**重要度**", "5.8. バグの重要度"),
    ],
)
def test_markdown_marks_and_table_pipes_are_removed(raw: str, clean: str) -> None:
    assert readable_sentence(raw) == clean
    assert readable_sentence(clean) == clean  # already readable: unchanged (the page's second pass too)


def test_names_that_look_like_marks_stay_as_written() -> None:
    assert readable_sentence("Call `__init__` with `**kwargs` in __main__.") == (
        "Call __init__ with **kwargs in __main__."
    )
    assert (
        readable_sentence("Define __init__ and __repr__ on the class.")
        == "Define __init__ and __repr__ on the class."
    )


@pytest.mark.parametrize(
    "raw",
    [
        '{"port": 8765, "host": "127.0.0.1", "tls": false}',
        "|---|---|---|",
        "| --- | :---: | --- |",
        "## Ports",
        "Next »",
        "",
    ],
)
def test_fragments_are_no_sentences(raw: str) -> None:
    assert readable_sentence(raw) is None


def test_a_short_japanese_sentence_is_a_sentence() -> None:
    assert readable_sentence("重要度は wishlist。") == "重要度は wishlist。"
    assert readable_sentence("重要度は高い。") == "重要度は高い。"  # 7 characters, 13 by width
