"""Terms of llms.txt link titles, descriptions and URLs, for the BM25F link ranker (`sites.rank`).

Titles are a few words, so a word keeps its exact form beside its stem, technical tokens (`useState`,
`@hono/zod`, `--flag`) stay whole beside their parts, and `bigrams` of the stems carry word order. The
stemmer and `LINK_STOPWORDS` are the analyzer's (see `analyzer` for how this differs from the index).
"""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import pairwise

from citedocs.text.analyzer import LINK_STOPWORDS, stem_word
from citedocs.text.cjk import CJK_RUN, content_cjk_words, is_japanese, normalize, query_cjk_tokens

__all__ = ["RAW_TOKEN", "analyze", "analyze_token", "bigrams", "tokenize"]

RAW_TOKEN = re.compile(r"(?:--?|[@#$])?[^\W_](?:\w|[./\-:@+#'’](?=[^\W_]))*")
_CAMEL_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z0-9]+|[A-Z0-9]+")
_TECHNICAL = re.compile(r"[./\-:@+#$_]|[a-z][A-Z]|[A-Z]{2,}[a-z]|[A-Za-z]\d|\d[A-Za-z]")


def _word_terms(word: str) -> tuple[str, ...]:
    """A plain lower-case word: its stem, plus the exact form when stemming changed it."""
    if word in LINK_STOPWORDS:
        return ()
    stem = stem_word(word)
    return (stem,) if stem == word else (stem, word)


@lru_cache(maxsize=65_536)
def analyze_token(raw: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(index terms, stems in reading order for bigrams) of one raw token."""
    raw = re.sub(r"['’]s$", "", raw)
    raw = raw.replace("'", "").replace("’", "")
    if not raw:
        return (), ()
    if not _TECHNICAL.search(raw):
        plain = _word_terms(raw.lower())
        return plain, plain[:1]
    terms = [raw.lower().rstrip(".:")]
    stems: list[str] = []
    for chunk in re.findall(r"[^\W_]+", raw):
        parts = _CAMEL_PART.findall(chunk) if chunk.isascii() else [chunk]
        for part in parts:
            part_terms = _word_terms(part.lower())
            terms.extend(t for t in part_terms if t not in terms)
            stems.extend(part_terms[:1])
        if len(parts) > 2:  # upgradeWebSocket should answer "websocket" too
            terms.extend(j for a, b in pairwise(parts) if (j := (a + b).lower()) not in terms)
    return tuple(terms), tuple(stems)


def analyze(text: str, japanese: bool | None = None, *, query: bool = False) -> tuple[list[str], list[str]]:
    """(terms, stems in reading order); CJK runs give their content words (`cjk`), as in the index.

    `japanese`: the text belongs to a Japanese site (its other links hold kana), so a title of kanji only is
    cut into Japanese words like the rest (None: decide by the text itself). A `query` run of ideographs
    without kana gives both forms as terms (`cjk.query_cjk_tokens`): the site may be Japanese or Chinese."""
    terms: list[str] = []
    stems: list[str] = []
    text = normalize(text)
    if japanese is None:
        japanese = is_japanese(text)
    for match in RAW_TOKEN.finditer(text):
        raw = match.group()
        if raw.isascii() or CJK_RUN.search(raw) is None:
            token_terms, token_stems = analyze_token(raw)
            terms.extend(token_terms)
            stems.extend(token_stems)
            continue
        for piece in re.split(f"({CJK_RUN.pattern})", raw):
            if not piece:
                continue
            if CJK_RUN.fullmatch(piece):
                words = content_cjk_words(piece, japanese)
                terms.extend(
                    [w for w, level in query_cjk_tokens(piece, japanese) if level] if query else words
                )
                stems.extend(words)
            else:
                for sub in RAW_TOKEN.findall(piece):
                    token_terms, token_stems = analyze_token(sub)
                    terms.extend(token_terms)
                    stems.extend(token_stems)
    return terms, stems


def tokenize(text: str) -> list[str]:
    """Index terms of `text`: stems of plain words (plus their exact form when it differs), and for technical
    tokens (`useState`, `snake_case`, `v2.3`, `--flag`, `@hono/zod`) the whole token unstemmed plus its parts.
    English stop words are dropped. Pure; the same analysis serves documents and queries."""
    return analyze(text)[0]


def bigrams(stems: list[str]) -> list[str]:
    return [f"{a} {b}" for a, b in pairwise(stems)]
