"""Content terms (text/terms.py): what the duplicate filter and the citation checker compare."""

from __future__ import annotations

import json
import re

import pytest

from citedocs.text.cjk import CJK_RUN, content_cjk_words, has_cjk, is_japanese, normalize
from citedocs.text.terms import (
    _TOKEN_RE,
    CJK_FRAMING_WORDS,
    Terms,
    _token_terms,
    coverage,
    extract_terms,
)
from conftest import shared


def _piece_by_piece(text: str, keep_parts: bool) -> Terms:
    """The rule: each white-space-separated piece's tokens, each analysed on its own (`_token_terms`)."""
    numbers: set[str] = set()
    identifiers: set[str] = set()
    words: set[str] = set()
    if has_cjk(text):
        text = normalize(text)
        japanese = is_japanese(text)
        for run in CJK_RUN.findall(text):
            words.update(
                w for w in content_cjk_words(run, japanese, facts=True) if w not in CJK_FRAMING_WORDS
            )
        text = CJK_RUN.sub(" ", text)
    for piece in text.split():
        for token in _TOKEN_RE.findall(piece):
            found_numbers, found_identifiers, found_words = _token_terms(token, keep_parts)
            numbers.update(found_numbers)
            identifiers.update(found_identifiers)
            words.update(found_words)
    return Terms(frozenset(numbers), frozenset(identifiers), frozenset(words))


@pytest.mark.parametrize("keep_parts", [False, True])
def test_terms_from_cached_pieces_are_the_piece_by_piece_terms_on_real_corpora(
    keep_parts: bool,
) -> None:
    lines = (shared("scifact") / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[:1500]
    texts = [json.loads(line)["text"] for line in lines]
    for page in sorted((shared("claude-docs-qa") / "docs").glob("*.md"))[:20]:
        texts.extend(p for p in page.read_text(encoding="utf-8").split("\n\n") if p.strip())
    texts += ["$1,024.50% of config.toml v2.3 it's 8080", "claude-3-haiku-20240307 ~/.config/app/config.toml"]
    for text in texts:
        assert extract_terms(text, keep_parts=keep_parts) == _piece_by_piece(text, keep_parts), text


def test_coverage_weighs_numbers_then_identifiers_then_words() -> None:
    needed = extract_terms("port 8080 in config.toml")
    assert coverage(needed, extract_terms("config.toml sets port 8080")) == 1.0
    assert coverage(needed, extract_terms("port")) == pytest.approx(1 / 6)


# The token pattern before its quantifiers were made possessive: the tokens must be the same.
_BACKTRACKING_TOKEN_RE = re.compile(
    r"\$?\d+(?:[.,]\d+)*%?|[A-Za-z_][\w]*(?:[.\-/:][A-Za-z0-9_]+)+|[A-Za-z_][\w']*"
)


def test_the_possessive_token_pattern_finds_the_tokens_the_backtracking_one_found() -> None:
    lines = (shared("scifact") / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    texts = [json.loads(line)["text"] for line in lines]
    texts += [p.read_text(encoding="utf-8") for p in (shared("claude-docs-qa") / "docs").glob("*.md")]
    texts += ["it's.x a.b. a.bé $1,024.50% 3.5.6 1,024, don't-stop x_y.z/w:v a..b --x-y '"]
    for text in texts:
        assert _TOKEN_RE.findall(text) == _BACKTRACKING_TOKEN_RE.findall(text), text
