from __future__ import annotations

import itertools

import pytest

from citedocs.chunker import chunk_segments
from citedocs.parsers.base import Segment
from citedocs.text.tokens import estimate_tokens


def _para(n: int, word: str = "alpha") -> str:
    return " ".join(f"{word}{i}" for i in range(n))


def test_small_document_is_one_chunk_with_heading_path_and_lines() -> None:
    seg = Segment("Install with pip.\n\nThen run it.", ("Setup", "Windows"), 3, 5)
    [chunk] = chunk_segments([seg])
    assert chunk.heading == "Setup > Windows"
    assert (chunk.line_start, chunk.line_end) == (3, 5)
    assert "Then run it." in chunk.text


def test_long_section_splits_near_target_with_overlap() -> None:
    paragraphs = [_para(60, f"w{p}x") for p in range(20)]  # ~20 paragraphs of ~100 tokens
    text = "\n\n".join(paragraphs)
    lines = text.count("\n") + 1
    chunks = chunk_segments([Segment(text, ("Guide",), 1, lines)], target=400, overlap=60, max_tokens=560)
    assert len(chunks) >= 4
    assert all(c.tokens <= 560 for c in chunks)
    assert all(c.heading == "Guide" for c in chunks)
    for prev, nxt in itertools.pairwise(chunks):
        # the next chunk starts with text the previous one ended with (overlap), never skips a paragraph
        assert nxt.line_start <= prev.line_end + 2
    covered = set()
    for c in chunks:
        covered.update(range(c.line_start, c.line_end + 1))
    assert covered >= {i for i, line in enumerate(text.split("\n"), 1) if line.strip()}


def test_code_block_is_never_split_even_when_large() -> None:
    code = (
        "```python\n"
        + "\n".join(f"x_{i} = {i}  # a fairly long line of code here" for i in range(200))
        + "\n```"
    )
    before = Segment(_para(50), ("API",), 1, 1)
    block = Segment(code, ("API",), 3, 3 + code.count("\n"), kind="code")
    after = Segment(_para(50), ("API",), 205, 205)
    chunks = chunk_segments([before, block, after], target=400, max_tokens=560)
    holding = [c for c in chunks if "x_0 = 0" in c.text or "x_199 = 199" in c.text]
    assert len(holding) == 1
    assert "x_0 = 0" in holding[0].text and "x_199 = 199" in holding[0].text
    assert holding[0].text.count("```") == 2


def test_a_heading_line_joins_the_code_under_it_instead_of_standing_alone() -> None:
    # issue 47: "## Examples" above a large code block was a chunk of 3 tokens that answered nothing
    code = "```python\n" + "\n".join(f"x{i} = call_{i}()" for i in range(300)) + "\n```"
    segments = [
        Segment("## Examples", ("Page", "Examples"), 1, 1),
        Segment(code, ("Page", "Examples"), 2, 303, kind="code"),
    ]
    [chunk] = chunk_segments(segments, target=400, max_tokens=560)
    assert chunk.text.startswith("## Examples\n\n```python") and (chunk.line_start, chunk.line_end) == (
        1,
        303,
    )
    # a paragraph of its own still ends a chunk once it is long enough to stand alone
    long_para = _para(200)
    chunks = chunk_segments(
        [Segment(long_para, ("Page",), 1, 1), Segment(code, ("Page",), 2, 303, kind="code")],
        target=400,
        max_tokens=560,
    )
    assert [c.text.startswith("```") for c in chunks] == [False, True]


def test_chunks_never_cross_headings_or_pages() -> None:
    segs = [
        Segment(_para(120, "a"), ("One",), 1, 1, page=1),
        Segment(_para(120, "b"), ("One",), 2, 2, page=2),
        Segment(_para(120, "c"), ("Two",), 3, 3, page=2),
    ]
    chunks = chunk_segments(segs)
    assert [(c.heading, c.page_start) for c in chunks] == [("One", 1), ("One", 2), ("Two", 2)]


def test_short_intro_folds_into_child_section_but_not_into_sibling() -> None:
    segs = [
        Segment("Setup intro.", ("Setup",), 1, 1),
        Segment(_para(100), ("Setup", "Windows"), 3, 3),
        Segment("Tiny.", ("Other",), 5, 5),
        Segment(_para(100), ("Third",), 7, 7),
    ]
    chunks = chunk_segments(segs, min_tokens=60)
    assert chunks[0].heading == "Setup > Windows" and chunks[0].text.startswith("Setup intro.")
    assert [c.heading for c in chunks[1:]] == ["Other", "Third"]


def test_oversized_single_line_is_split_at_sentences() -> None:
    line = " ".join(f"Sentence number {i} says something useful." for i in range(300))
    chunks = chunk_segments([Segment(line, (), 1, 1)], target=400, max_tokens=560)
    assert len(chunks) > 1
    assert all(c.tokens <= 560 for c in chunks)


def test_empty_segments_give_no_chunks() -> None:
    assert chunk_segments([Segment("  \n ", (), 1, 2)]) == []
    assert estimate_tokens("") == 0


def _one_line(chars: int, unit: str) -> str:
    return (unit * (chars // len(unit) + 1))[:chars]


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "unit",
    [
        "lorem ipsum dolor sit amet ",
        "x",
        pytest.param("Short one. ", marks=pytest.mark.slow),
        pytest.param("日本語の短い文です。", marks=pytest.mark.slow),
    ],
)
def test_a_45_mb_single_line_chunks_in_seconds_not_hours(unit: str) -> None:
    # Cutting the rest of a line with `part = part[cut:]` copied it each time: 16 MB took 30 s, 45 MB (under
    # the 50 MB file cap) did not finish in 5 minutes, and stopped the indexing of every later file.
    chars = 45_000_000
    chunks = chunk_segments([Segment(_one_line(chars, unit), (), 1, 1)])
    assert all(c.tokens <= 560 for c in chunks)
    assert (
        sum(len(c.text) for c in chunks) >= chars * 0.99
    )  # nothing lost: pieces are joined with spaces only
    assert all((c.line_start, c.line_end) == (1, 1) for c in chunks)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_millions_of_short_lines_in_one_paragraph_chunk_in_seconds() -> None:
    text = "\n".join(f"2026-12-01 12:00:{i % 60:02d} event {i}" for i in range(1_000_000))
    chunks = chunk_segments([Segment(text, (), 1, 1_000_000)])
    assert chunks[-1].line_end == 1_000_000 and all(c.tokens <= 560 for c in chunks)


def test_long_line_pieces_are_whole_sentences_then_cuts_at_spaces() -> None:
    long_sentence = " ".join(f"w{i}" for i in range(1200))  # ~1,200 tokens, no sentence end
    line = f"First sentence here. {long_sentence}. Last one."
    pieces = [
        c.text for c in chunk_segments([Segment(line, (), 1, 1)], target=400, overlap=0, max_tokens=560)
    ]
    joined = " ".join(p.replace("\n\n", " ") for p in pieces)
    assert joined.split() == line.split()
    assert pieces[0].startswith("First sentence here.")
    assert all(not p.startswith(" ") and not p.endswith(" ") for p in pieces)


def _japanese_paragraph(i: int) -> str:
    return f"段落{i}では、パッケージのバージョン番号とアップロードの手順について説明します。" * 4


def test_japanese_passages_are_sized_in_the_tokens_a_model_reads() -> None:
    # Counted as characters / 4, a Japanese passage was ~0.62 of its real tokens (Qwen2.5's tokenizer on the
    # Japanese manual), so a 400-token passage was ~650 tokens: longer than the embedder reads, twice the
    # prompt an English question gets. A CJK character is ~0.65 tokens (text/tokens.py).
    text = "\n\n".join(_japanese_paragraph(i) for i in range(40))
    chunks = chunk_segments([Segment(text, ("手引き",), 1, 79)], target=400, overlap=60, max_tokens=560)
    assert all(c.tokens <= 560 for c in chunks)
    assert max(len(c.text) for c in chunks) < 900  # 560 tokens of Japanese (the old rule: up to 2,240)
    assert estimate_tokens("日本語" * 100) == 195
    assert estimate_tokens("a" * 401) == estimate_tokens("é" * 401) == 101  # other text: characters / 4
    assert estimate_tokens("“µ–”" * 100) == 100 and estimate_tokens("\ud800日本") == 2  # a lone surrogate too


def test_a_long_japanese_line_is_cut_after_its_sentences() -> None:
    # No spaces and no ". " in Japanese: a line over the limit was cut wherever its characters ran out.
    sentences = [f"文{i}はバージョン番号の付け方を説明しています。" for i in range(120)]
    line = "".join(sentences)
    pieces = [
        c.text for c in chunk_segments([Segment(line, (), 1, 1)], target=400, overlap=0, max_tokens=560)
    ]
    assert len(pieces) > 1 and all(estimate_tokens(p) <= 560 for p in pieces)
    assert all(p.endswith("。") for p in pieces)
    assert "".join(pieces) == line  # nothing lost, nothing added
