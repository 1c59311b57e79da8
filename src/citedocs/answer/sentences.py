"""Split an answer into sentences and find its citation markers, keeping offsets so markers can be rewritten.

Code is masked first (inline `code` and fenced blocks), so `a.b()` or `list[0]` inside code is neither a
sentence end nor a citation. List items, headings and table rows are units of their own; a sentence ends at
`.`, `!` or `?` (plus any citations right after it) when whitespace and a capital, digit, opening mark or
CJK character follow (those scripts have no lower case to say a sentence goes on), unless the period ends a
known abbreviation, an initial or the section number that opens a line (`4.6.5. Release names`); at `。`,
`！`, `？` with no space. A line that is one of the passage's
headings (plain text from HTML, PDF or Word, where no `#` marks it) is a heading of its own.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from citedocs.text.cjk import CJK_RUN

MAX_RANGE_SPAN = 50

CITATION_RE = re.compile(
    r"\[(?:(?:sources?|refs?|ref\.)\s*)?(\d{1,4}(?:\s*(?:,|-|–|and)\s*\d{1,4})*)\]", re.IGNORECASE
)
_CODE_RE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]+`", re.DOTALL)
_LIST_ITEM_RE = re.compile(r"[ \t]*(?:[-*+•]|\d{1,3}[.)])[ \t]+")
_HEADING_RE = re.compile(r"[ \t]*#{1,6}[ \t]+")
_SECTION_NUMBER_RE = re.compile(r"[ \t]*\d{1,3}(?:\.\d{1,3})+")
_TERMINAL_RE = re.compile(r"[.!?]+|[。！？．]+")
# Full-width terminals (Japanese, Chinese) end a sentence with no space after them.
_FULL_WIDTH_TERMINALS = frozenset("。！？．")
_CLOSERS = "\"')”’*_」』）】〉》"
_OPENERS = "\"'“‘`(*_["


def _word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


ABBREVIATIONS = _word_set(
    """
    e.g i.e vs cf al approx fig figs no nos vol eq eqs sec ch p pp mr mrs ms dr prof st jr sr inc
    ltd co corp dept est min max ref refs jan feb mar apr jun jul aug sep sept oct nov dec
    """
)


@dataclass(frozen=True, slots=True)
class Marker:
    """One citation marker: its span in the answer and the numbers it names."""

    start: int
    end: int
    numbers: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Span:
    """One sentence (or list item, heading, code block): offsets into the answer, and its kind."""

    start: int
    end: int
    kind: str  # "text" | "heading" | "code"


def mask_code(text: str) -> str:
    """Same-length text with code replaced by spaces and underscores: offsets stay valid."""
    return _CODE_RE.sub(lambda m: re.sub(r"[^\n]", "_", m.group(0)), text)


def parse_numbers(inner: str) -> tuple[int, ...]:
    """`1, 3-5` -> (1, 3, 4, 5); a range wider than MAX_RANGE_SPAN keeps only its ends."""
    numbers: list[int] = []
    for part in re.split(r"\s*(?:,|and)\s*", inner):
        bounds = re.split(r"\s*[-–]\s*", part.strip())
        if len(bounds) == 2 and bounds[0].isdigit() and bounds[1].isdigit():
            low, high = int(bounds[0]), int(bounds[1])
            if low <= high and high - low <= MAX_RANGE_SPAN:
                numbers.extend(range(low, high + 1))
            else:
                numbers.extend([low, high])
        else:
            numbers.extend(int(b) for b in bounds if b.isdigit())
    return tuple(numbers)


def find_markers(text: str) -> list[Marker]:
    """Citation markers outside code: `[1]`, `[1, 2]`, `[1][2]`, `[1-3]`, `[Source 2]`."""
    masked = mask_code(text)
    return [Marker(m.start(), m.end(), parse_numbers(m.group(1))) for m in CITATION_RE.finditer(masked)]


def parse_citations(text: str) -> list[int]:
    """Every cited number, sorted and unique."""
    return sorted({n for marker in find_markers(text) for n in marker.numbers})


def strip_markers(text: str) -> str:
    masked = mask_code(text)
    pieces, last = [], 0
    for m in CITATION_RE.finditer(masked):
        pieces.append(text[last : m.start()].rstrip(" \t"))
        last = m.end()
    pieces.append(text[last:])
    return "".join(pieces)


def split_sentences(text: str, headings: Collection[str] = ()) -> list[Span]:
    """Sentence spans of an answer or passage, in order, without the list markers and whitespace between
    them; a line that is one of `headings` (the passage's heading path) is a heading."""
    masked = mask_code(text)
    spans: list[Span] = []
    for start, end, kind in _blocks(text, masked, frozenset(h.strip() for h in headings if h.strip())):
        if kind == "text":
            spans.extend(_split_block(masked, start, end))
        else:
            spans.append(Span(start, end, kind))
    return spans


def _blocks(text: str, masked: str, headings: frozenset[str]) -> list[tuple[int, int, str]]:
    """Paragraph pieces: runs of prose lines, and each list item, heading, table row or code block."""
    blocks: list[tuple[int, int, str]] = []
    current: list[int] | None = None  # [start, end] of the open prose block
    in_item = False  # the open block is a list item: an unindented line after it starts a new block
    offset = 0
    in_fence = False
    fence_start = 0
    for line in text.splitlines(keepends=True):
        line_start, body = offset, line.rstrip("\r\n")
        offset += len(line)
        if body.lstrip().startswith("```"):
            if not in_fence:
                _close(blocks, current)
                current, in_fence, fence_start = None, True, line_start
            else:
                blocks.append((fence_start, line_start + len(body), "code"))
                in_fence = False
            continue
        if in_fence:
            continue
        if not body.strip():
            _close(blocks, current)
            current = None
            continue
        heading = _HEADING_RE.match(body)
        item = _LIST_ITEM_RE.match(body)
        if heading or body.strip() in headings:
            _close(blocks, current)
            current = None
            lead = heading.end() if heading else len(body) - len(body.lstrip())
            blocks.append((line_start + lead, line_start + len(body.rstrip()), "heading"))
        elif item or body.lstrip().startswith("|"):
            _close(blocks, current)
            lead = item.end() if item else len(body) - len(body.lstrip())
            current = [line_start + lead, line_start + len(body)]
            in_item = True
        elif current is None or (in_item and not body[:1].isspace()):
            _close(blocks, current)
            in_item = False
            current = [line_start + len(body) - len(body.lstrip()), line_start + len(body)]
        else:
            current[1] = line_start + len(body)
    if in_fence:
        blocks.append((fence_start, len(text), "code"))
    _close(blocks, current)
    return [(s, e, k) for s, e, k in blocks if masked[s:e].strip() or k == "code"]


def _close(blocks: list[tuple[int, int, str]], current: list[int] | None) -> None:
    if current is not None:
        blocks.append((current[0], current[1], "text"))


def _split_block(masked: str, start: int, end: int) -> list[Span]:
    spans: list[Span] = []
    sentence_start = start
    for match in _TERMINAL_RE.finditer(masked, start, end):
        cut = _boundary(masked, match, end)
        if cut is None or cut <= sentence_start:
            continue
        spans.append(Span(sentence_start, cut, "text"))
        sentence_start = cut
        while sentence_start < end and masked[sentence_start].isspace():
            sentence_start += 1
    if masked[sentence_start:end].strip():
        spans.append(Span(sentence_start, len(masked[:end].rstrip()), "text"))
    return spans


def _boundary(masked: str, match: re.Match[str], end: int) -> int | None:
    """Where the sentence ending at `match` stops (after closers and citations), or None if it does not."""
    if match.group(0) == "." and (
        _is_abbreviation(masked, match.start()) or _is_section_number(masked, match.start())
    ):
        return None
    full_width = match.group(0)[0] in _FULL_WIDTH_TERMINALS
    pos = match.end()
    while pos < end and masked[pos] in _CLOSERS:
        pos += 1
    cut = pos
    while True:
        ws = pos
        while ws < end and masked[ws] in " \t":
            ws += 1
        citation = CITATION_RE.match(masked, ws, end)
        if not citation:
            break
        pos = cut = citation.end()
    if cut >= end:
        return end
    if full_width:
        return cut
    if not masked[cut].isspace():
        return None
    nxt = cut
    while nxt < end and masked[nxt].isspace():
        nxt += 1
    if nxt >= end:
        return cut
    following = masked[nxt]
    if following.isupper() or following.isdigit() or following in _OPENERS or CJK_RUN.match(following):
        return cut
    return None


def _is_section_number(masked: str, dot: int) -> bool:
    """The period closes a section number that opens its line (`4.6.5. Release names`, `5.8.4. 新規...`)."""
    line_start = masked.rfind("\n", 0, dot) + 1
    return _SECTION_NUMBER_RE.fullmatch(masked, line_start, dot) is not None


def _is_abbreviation(masked: str, dot: int) -> bool:
    word_start = dot
    while word_start > 0 and (masked[word_start - 1].isalpha() or masked[word_start - 1] == "."):
        word_start -= 1
    word = masked[word_start:dot].lower()
    if not word:
        return False
    return word in ABBREVIATIONS or (len(word) == 1 and masked[dot - 1].isupper())
