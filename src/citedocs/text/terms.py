"""Content terms of a text, for lexical support and relevance checks.

Three kinds, weighted by how much they pin a fact down: numbers (`8080`, `3.5`, `89.01`) must match exactly,
identifiers (`requestState`, `config.toml`, `claude-3-haiku-20240307`) match unstemmed, and the remaining
words are stemmed content words, with `CONTENT_STOPWORDS` and framing words removed (see `analyzer`). CJK text
contributes the words that state facts (`cjk`: nouns and adjectives) as words.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import chain

from citedocs.text.analyzer import CONTENT_STOPWORDS, stem_word, stem_words, word_set
from citedocs.text.cjk import CJK_RUN, content_cjk_words, has_cjk, is_japanese, normalize

NUMBER_WEIGHT = 3.0
IDENTIFIER_WEIGHT = 2.0
WORD_WEIGHT = 1.0


# Words that frame an answer rather than state a fact ("According to the documentation, ...").
FRAMING_WORDS = word_set(
    """
    according answer based describe described describes document documentation documents example
    follow following indicate indicates mention mentioned mentions note noted notes passage passages
    provide provided provides refer say says see shown source sources specifically state stated
    states
    """
)

# The same for Japanese, as the analyzer's normalised forms ("according to the documentation" = ドキュメントによると).
CJK_FRAMING_WORDS = word_set(
    "よる いつ 何 どこ どう どの どれ 誰 なぜ 何故 如何 ドキュメント 文書 資料 記載 説明 参照 によると 依る 従う 通り 情報 以下 上記 回答 答え 為る 有る 居る 成る 出来る 事 こと 物 其れ 此れ"
)

# Possessive quantifiers: giving characters back can never make these match more (what follows each run
# cannot be the character given back), so the regex does not retry a word at every length (40% faster).
_TOKEN_RE = re.compile(
    r"""
    \$?\d++(?:[.,]\d+)*+%?                          # numbers: 8080, 3.5, 1,024, 89.01%, $0.0004
    | [A-Za-z_]\w*+(?:(?:[.\-/:][A-Za-z0-9_]++)++   # dotted/dashed/slashed identifiers: config.toml, gpt-4o
    | [\w']*+)                                       # words and snake_case / camelCase names
    """,
    re.VERBOSE,
)
_CAMEL_RE = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]{2}")
_SEPARATOR_RE = re.compile(r"([.\-/:_])")
MAX_IDENTIFIER_PARTS = 8


@dataclass(frozen=True, slots=True)
class Terms:
    """Content terms of one text: numbers, identifiers (lowercase) and stemmed words."""

    numbers: frozenset[str]
    identifiers: frozenset[str]
    words: frozenset[str]

    def weighted(self) -> dict[str, float]:
        weights = dict.fromkeys(self.words, WORD_WEIGHT)
        weights.update(dict.fromkeys(self.identifiers, IDENTIFIER_WEIGHT))
        weights.update(dict.fromkeys(self.numbers, NUMBER_WEIGHT))
        return weights

    @property
    def all(self) -> frozenset[str]:
        return self.numbers | self.identifiers | self.words

    def __bool__(self) -> bool:
        return bool(self.numbers or self.identifiers or self.words)


def normalize_number(token: str) -> str:
    """`$1,024.50%` -> `1024.50`: currency, percent and thousands separators do not change a number."""
    token = token.lstrip("$").rstrip("%")
    if re.fullmatch(r"\d{1,3}(,\d{3})+(\.\d+)?", token):
        token = token.replace(",", "")
    return token


def _is_identifier(token: str) -> bool:
    if token.isalpha():  # most tokens: no separator, no digit
        return bool(_CAMEL_RE.search(token))
    return (
        "_" in token
        or any(ch in token for ch in ".-/:")
        or bool(_CAMEL_RE.search(token))
        or (any(ch.isdigit() for ch in token) and any(ch.isalpha() for ch in token))
    )


def _sub_identifiers(identifier: str) -> set[str]:
    """`a/b/config.toml` -> {`b/config.toml`, `config.toml`, `a/b`, ...}: spans of two or more parts."""
    pieces = _SEPARATOR_RE.split(identifier)
    parts = pieces[::2][:MAX_IDENTIFIER_PARTS]
    spans: set[str] = set()
    for start in range(len(parts)):
        for end in range(start + 2, len(parts) + 1):
            spans.add("".join(pieces[2 * start : 2 * end - 1]))
    return spans


def extract_terms(text: str, *, keep_parts: bool = False) -> Terms:
    """Content terms of `text`.

    With `keep_parts` (used for passages), an identifier also contributes its sub-spans and parts, so a
    passage holding `~/.config/app/config.toml` supports a sentence naming `config.toml`, and `haiku` or
    `20240307` match as a word and a number. No token holds white space, so the text is cut at white space
    (`str.split`, in C) and each distinct piece's terms are remembered across texts (`_piece_plain`): a
    passage costs a split and look-ups; the token regex runs only on pieces no text held before (measured
    on SciFact passages: 144 -> ~100 µs, the regex over the whole text alone was 64 µs).
    """
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
    # Each distinct piece's terms are a cache look-up in C; the three kinds are gathered in C too.
    found = list(map(_piece_parts if keep_parts else _piece_plain, set(text.split())))
    if found:
        found_numbers, found_identifiers, found_words = zip(*found, strict=True)
        numbers.update(chain.from_iterable(found_numbers))
        identifiers.update(chain.from_iterable(found_identifiers))
        words.update(chain.from_iterable(found_words))
    return Terms(frozenset(numbers), frozenset(identifiers), frozenset(words))


_NO_TERMS: tuple[str, ...] = ()
_Found = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]


def _gathered(found: Iterable[_Found]) -> _Found:
    """The numbers, identifiers and words of several tokens, each kind in one tuple."""
    columns = tuple(zip(*found, strict=True))
    if not columns:
        return _NO_TERMS, _NO_TERMS, _NO_TERMS
    numbers, identifiers, words = columns
    return (
        tuple(chain.from_iterable(numbers)),
        tuple(chain.from_iterable(identifiers)),
        tuple(chain.from_iterable(words)),
    )


@functools.lru_cache(maxsize=65536)
def _piece_plain(piece: str) -> _Found:
    """The terms of one white-space-free piece of text (`word,`, `(p<0.05)`, `config.toml.`)."""
    tokens = _TOKEN_RE.findall(piece)
    return _token_plain(tokens[0]) if len(tokens) == 1 else _gathered(map(_token_plain, tokens))


@functools.lru_cache(maxsize=65536)
def _piece_parts(piece: str) -> _Found:
    tokens = _TOKEN_RE.findall(piece)
    return _token_parts(tokens[0]) if len(tokens) == 1 else _gathered(map(_token_parts, tokens))


@functools.lru_cache(maxsize=131072)
def _token_plain(token: str) -> _Found:
    """`_token_terms` without parts, remembered by the token alone (a one-argument cache is looked up in C)."""
    return _token_terms(token, False)


@functools.lru_cache(maxsize=131072)
def _token_parts(token: str) -> _Found:
    return _token_terms(token, True)


def _token_terms(token: str, keep_parts: bool) -> _Found:
    """(numbers, identifiers, stemmed words) one token of `_TOKEN_RE` contributes."""
    if token[0].isdigit() or token[0] == "$":
        return (normalize_number(token),), _NO_TERMS, _NO_TERMS
    token = token.strip("'")
    lower = token.lower()
    if _is_identifier(token):
        if lower.rstrip(".") in CONTENT_STOPWORDS:
            return _NO_TERMS, _NO_TERMS, _NO_TERMS
        identifiers = {lower.rstrip(".:-/")}
        numbers: list[str] = []
        words: list[str] = []
        if keep_parts:
            identifiers.update(_sub_identifiers(lower))
            for part in _SEPARATOR_RE.split(lower)[::2]:
                if part.isdigit():
                    numbers.append(part)
                elif part and part not in CONTENT_STOPWORDS:
                    words.append(part)
        return tuple(numbers), tuple(identifiers), tuple(stem_words(words)) if words else _NO_TERMS
    if lower in CONTENT_STOPWORDS or lower in FRAMING_WORDS or len(lower) < 2:
        return _NO_TERMS, _NO_TERMS, _NO_TERMS
    return _NO_TERMS, _NO_TERMS, (stem_word(lower.removesuffix("'s")),)


def union(terms: Iterable[Terms]) -> Terms:
    numbers: set[str] = set()
    identifiers: set[str] = set()
    words: set[str] = set()
    for item in terms:
        numbers |= item.numbers
        identifiers |= item.identifiers
        words |= item.words
    return Terms(frozenset(numbers), frozenset(identifiers), frozenset(words))


def coverage(needed: Terms, present: Terms, weights: dict[str, float] | None = None) -> float:
    """Weighted fraction of `needed`'s terms found in `present` (1.0 when nothing is needed)."""
    if weights is None:  # each term weighed by its kind, as `weighted` does, counted by set operations
        identifiers = needed.identifiers - needed.numbers
        words = needed.words - needed.identifiers - needed.numbers
        total = NUMBER_WEIGHT * len(needed.numbers) + IDENTIFIER_WEIGHT * len(identifiers) + len(words)
        if total == 0:
            return 1.0
        found = (
            NUMBER_WEIGHT * len(needed.numbers & present.numbers)
            + IDENTIFIER_WEIGHT * len(identifiers & present.identifiers)
            + WORD_WEIGHT * len(words & present.words)
        )
        return found / total
    total = sum(weights.values())
    if total == 0:
        return 1.0
    found = sum(w for term, w in weights.items() if _present(term, needed, present))
    return found / total


def held_terms(needed: Terms, present: Terms) -> frozenset[str]:
    """The terms of `needed` that `present` holds (a number as a number, an identifier as an identifier)."""
    return frozenset(term for term in needed.all if _present(term, needed, present))


def _present(term: str, needed: Terms, present: Terms) -> bool:
    if term in needed.numbers:
        return term in present.numbers
    if term in needed.identifiers:
        return term in present.identifiers
    return term in present.words or _inside_cjk_word(term, present.words)


def _inside_cjk_word(term: str, words: frozenset[str]) -> bool:
    """A CJK word of two or more characters inside a longer word of the passage: Japanese writes compounds
    and abbreviations as one word (`メンテ` in `メンテナンス`, `生成` in `自動生成`), and a question of kanji only is
    cut into bigrams (`重要`, `要度` in `重要度`)."""
    return len(term) > 1 and has_cjk(term) and any(len(w) > len(term) and term in w for w in words)
