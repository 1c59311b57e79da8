from __future__ import annotations

import itertools

from citedocs.chunker import chunk_segments, estimate_tokens
from citedocs.parsers.base import Segment


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
