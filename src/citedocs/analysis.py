"""Text analysis for the keyword index: one function for documents and queries, so both see the same terms.

Prose is stemmed (Snowball English); identifiers stay findable whole and by their parts: `snake_case` gives
`snake`, `case` and `snake_case`; `useState` gives `use`, `state`, `usestate`; `--dry-run` gives `dry`, `run`
and `--dry-run`; `v2.3` gives `v2`, `3` and `v2.3`. FTS5 sees the result through a tokenizer whose token
characters include `_ . -`, so a whole identifier is one FTS term.
"""

from __future__ import annotations

import functools
import re

import Stemmer

RAW_TOKEN = re.compile(r"-{0,2}\w+(?:[._\-/:@]\w+)*")
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+|[^\W\d_]+", re.UNICODE)
_FULL_UNSAFE = re.compile(r"[^\w.\-]")
FTS_TOKENIZER = "unicode61 remove_diacritics 2 tokenchars '_.-'"

STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "s",
        "t",
    ]
)


@functools.lru_cache(maxsize=1)
def _stemmer() -> Stemmer.Stemmer:
    return Stemmer.Stemmer("english")


@functools.lru_cache(maxsize=65536)
def _analyse_token(raw: str) -> tuple[str, ...]:
    parts = [p.lower() for p in _PART.findall(raw)]
    if not parts:
        return ()
    stemmer = _stemmer()
    out = [p if p.isdigit() else stemmer.stemWord(p) for p in parts]
    if len(parts) > 1 or raw.startswith("-"):
        out.append(_FULL_UNSAFE.sub("_", raw.lower()))
    return tuple(out)


def terms(text: str) -> list[str]:
    """Index terms of a text, in order, with repeats (BM25 needs term frequencies)."""
    out: list[str] = []
    for raw in RAW_TOKEN.findall(text):
        out.extend(_analyse_token(raw))
    return out


def index_text(text: str) -> str:
    return " ".join(terms(text))


def query_groups(query: str) -> list[tuple[str, ...]]:
    """Per query token, its analysed terms; a compound identifier's whole form comes last."""
    groups: dict[tuple[str, ...], None] = {}
    for raw in RAW_TOKEN.findall(query):
        analysed = _analyse_token(raw)
        if analysed and raw.lower() not in STOPWORDS:
            groups.setdefault(analysed, None)
    return list(groups)


def query_terms(query: str) -> list[str]:
    """Distinct query terms, stopwords dropped unless nothing else is left."""
    seen: dict[str, None] = {}
    kept: dict[str, None] = {}
    for raw in RAW_TOKEN.findall(query):
        lowered = raw.lower()
        for term in _analyse_token(raw):
            seen.setdefault(term, None)
            if lowered not in STOPWORDS and term not in STOPWORDS:
                kept.setdefault(term, None)
    return list(kept or seen)


def fts_match(query_terms_: list[str]) -> str:
    """An FTS5 MATCH expression that cannot be a syntax error: every term quoted, joined by OR."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in query_terms_)


def word_stem(word: str) -> str:
    """The stem used for highlighting: the same analysis as indexing, for one word."""
    analysed = _analyse_token(word)
    return analysed[0] if len(analysed) == 1 else word.lower()
