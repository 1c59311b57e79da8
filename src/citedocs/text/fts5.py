"""What SQLite FTS5's tokenizer makes of analysed terms, so an in-memory index counts exactly what FTS5 counts.

The keyword table stores analysed terms (`analyzer.terms`) under `unicode61 remove_diacritics 2 tokenchars
'_.-'`: FTS5 lower-cases each token, folds Latin diacritics (`café` and `cafe` are one term) and splits at any
character that is not a letter, a number, a private-use character or one of `_ . -` (the katakana middle dot
`・` the CJK cutter may leave inside a word, for one). BM25 needs FTS5's own tokens and their count per row.
"""

from __future__ import annotations

import functools
import re
import unicodedata

__all__ = ["FTS5_SEPARATOR", "fts5_token", "fts5_tokens"]

FTS5_SEPARATOR = re.compile(r"[^\w.\-]+")


@functools.lru_cache(maxsize=8192)
def _fold_char(ch: str) -> str:
    low = ch.lower()
    if len(low) != 1:  # FTS5 folds one code point to one code point
        low = ch
    code = ord(low)
    if 0xC0 <= code <= 0x24F or 0x1E00 <= code <= 0x1EFF:  # Latin-1, Latin Extended-A/B and Additional
        base = unicodedata.normalize("NFD", low)[0]
        if base.isascii():
            return base.lower()
    return low


def _is_token_char(ch: str) -> bool:
    return ch in "_.-" or unicodedata.category(ch)[0] in "LN" or unicodedata.category(ch) == "Co"


@functools.lru_cache(maxsize=65536)
def fts5_token(term: str) -> tuple[str, ...]:
    """FTS5's tokens for one analysed term: one token, or several where a character separates them."""
    if term.isascii():
        parts = FTS5_SEPARATOR.split(term.lower())
        return tuple(p for p in parts if p)
    out: list[str] = []
    current: list[str] = []
    for ch in term:
        if _is_token_char(ch):
            current.append(_fold_char(ch))
        elif current:
            out.append("".join(current))
            current = []
    if current:
        out.append("".join(current))
    return tuple(out)


def fts5_tokens(text: str) -> list[str]:
    """FTS5's tokens for a stored string of analysed terms, in order."""
    if text.isascii():
        lowered = text.lower()
        if FTS5_SEPARATOR.search(lowered.replace(" ", "")) is None:
            return lowered.split()
    out: list[str] = []
    for term in text.split():
        out.extend(fts5_token(term))
    return out
