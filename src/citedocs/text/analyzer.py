"""The one text analysis of citedocs: a shared stemmer and stopword list, and the terms each caller needs.

Every caller splits text with the same Snowball English stemmer (one per thread: PyStemmer objects are not
thread-safe) and drops words from one base stopword list, plus the additions named below. They differ on
purpose, because they answer different questions:

| caller | module | terms | stopwords | why it differs |
|---|---|---|---|---|
| keyword index (BM25) and its queries | `analyzer.terms`, `query_terms` | every token, stemmed; identifiers whole and split (`snake_case` → `snake`, `case`, `snake_case`) | `INDEX_STOPWORDS`, dropped from queries only | documents keep every term (term frequencies); FTS5 sees the same tokens |
| relevance gate, citation checker | `terms.extract_terms` | numbers exact, identifiers unstemmed, content words stemmed | `CONTENT_STOPWORDS` | a claim is supported by its facts: framing and hedging words prove nothing |
| llms.txt link ranking (BM25F) | `links.tokenize` | stems plus the exact form, technical tokens whole and split, bigrams | `LINK_STOPWORDS` | titles are a few words: the exact form and word pairs carry the match |

Prose is stemmed; identifiers stay findable whole and by their parts: `useState` gives `use`, `state`,
`usestate`; `--dry-run` gives `dry`, `run` and `--dry-run`; `v2.3` gives `v2`, `3` and `v2.3`. FTS5 sees the
result through a tokenizer whose token characters include `_ . -`, so a whole identifier is one FTS term.
"""

from __future__ import annotations

import functools
import itertools
import re
import threading
from collections.abc import Iterator

import Stemmer

from citedocs.text.cjk import CJK_RUN, cjk_tokens, is_japanese, normalize, query_cjk_tokens

__all__ = [
    "BASE_STOPWORDS",
    "CONTENT_STOPWORDS",
    "FTS_TOKENIZER",
    "INDEX_STOPWORDS",
    "LINK_STOPWORDS",
    "fact_groups",
    "fts_match",
    "index_text",
    "query_groups",
    "query_terms",
    "salient_words",
    "stem_word",
    "stem_words",
    "terms",
    "word_set",
    "word_stem",
]


def word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


# English function words (the Snowball list less its reflexive pronouns): every caller drops these.
BASE_STOPWORDS = word_set(
    """
    a about above after again against all am an and any are as at be because been before being below between
    both but by can could did do does doing down during each few for from further had has have having he her
    here hers him his how i if in into is it its itself just me more most my no nor not of off on once only or
    other our ours out over own same she should so some such than that the their theirs them then there these
    they this those through to too under until up very was we were what when where which while who whom why
    will with would you your yours
    """
)
REFLEXIVES = word_set("herself himself myself ourselves themselves yourself yourselves")
# What the index tokenizer leaves of "it's" and "don't".
CONTRACTION_FRAGMENTS = word_set("s t")
# Contractions, hedges and connectives: words a sentence can share with any passage without sharing a fact.
CONTENT_ADDITIONS = word_set(
    """
    also aren't can't cannot couldn't didn't doesn't don't e.g either etc even ever every get gets got hadn't
    hasn't haven't however i'd i'm i've i.e isn't it's let's may might much must mustn't neither now one others
    ought per rather shall shan't shouldn't since that's there's they're thus upon us via vs wasn't we're
    weren't what's whether whose within without won't wouldn't yes yet you'd you'll you're you've
    """
)

INDEX_STOPWORDS = BASE_STOPWORDS | REFLEXIVES | CONTRACTION_FRAGMENTS
CONTENT_STOPWORDS = BASE_STOPWORDS | REFLEXIVES | CONTENT_ADDITIONS
LINK_STOPWORDS = BASE_STOPWORDS

_local = threading.local()


def _stemmer() -> Stemmer.Stemmer:
    stemmer: Stemmer.Stemmer | None = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = Stemmer.Stemmer("english")
    return stemmer


def stem_word(word: str) -> str:
    """The Snowball English stem of one lower-case word (thread-safe)."""
    result: str = _stemmer().stemWord(word)
    return result


def stem_words(words: list[str]) -> list[str]:
    result: list[str] = _stemmer().stemWords(words)
    return result


# possessive: nothing given back could match more (what follows a run is never what was given back)
RAW_TOKEN = re.compile(r"-{0,2}+\w++(?:[._\-/:@]\w++)*+")
_ASCII_RAW_TOKEN = re.compile(RAW_TOKEN.pattern, re.ASCII)  # the same tokens of ASCII text, found faster
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+|[^\W\d_]+", re.UNICODE)
_FULL_UNSAFE = re.compile(r"[^\w.\-]")
FTS_TOKENIZER = "unicode61 remove_diacritics 2 tokenchars '_.-'"


@functools.lru_cache(maxsize=65536)
def _analyse_token(raw: str) -> tuple[str, ...]:
    if raw.isascii() and raw.isalpha() and raw[1:].islower():  # a plain word (most are): one part, as below
        return (stem_word(raw.lower()),)
    parts = [p.lower() for p in _PART.findall(raw)]
    if not parts:
        return ()
    out = [p if p.isdigit() else stem_word(p) for p in parts]
    if len(parts) > 1 or raw.startswith("-"):
        out.append(_FULL_UNSAFE.sub("_", raw.lower()))
    return tuple(out)


# A raw token, or a CJK word, and its level: 0 grammar (particles, endings), 1 content, 2 content that states
# a fact (a CJK noun or adjective; every raw token).
_Token = tuple[str, bool, int]


def _tokens(text: str, japanese: bool | None = None, *, query: bool = False) -> Iterator[_Token]:
    """(raw token or CJK word, is CJK, level) in reading order; CJK runs are cut by `cjk`.

    `japanese`: the language of the document the text belongs to (None: the text holds kana); a `query`
    without kana is asked in both CJK forms (`cjk.query_cjk_tokens`)."""
    text = normalize(text)
    if japanese is None:
        japanese = is_japanese(text)
    cut = query_cjk_tokens if query else cjk_tokens
    for raw in RAW_TOKEN.findall(text):
        if raw.isascii() or CJK_RUN.search(raw) is None:
            yield raw, False, 2
            continue
        pos = 0
        for match in CJK_RUN.finditer(raw):
            for sub in RAW_TOKEN.findall(raw[pos : match.start()]):
                yield sub, False, 2
            for word, level in cut(match.group(), japanese):
                yield word, True, level
            pos = match.end()
        for sub in RAW_TOKEN.findall(raw[pos:]):
            yield sub, False, 2


def terms(text: str, japanese: bool | None = None) -> list[str]:
    """Index terms of a text, in order, with repeats (BM25 needs term frequencies); `japanese`: the text is
    part of a Japanese document (None: decide by the text itself: it holds kana)."""
    normalized = normalize(text)
    if normalized.isascii() or CJK_RUN.search(normalized) is None:  # as `_tokens` would: no per-token loop
        return list(itertools.chain.from_iterable(map(_analyse_token, RAW_TOKEN.findall(normalized))))
    out: list[str] = []
    for raw, cjk, _ in _tokens(text, japanese):
        if cjk:
            out.append(raw)
        else:
            out.extend(_analyse_token(raw))
    return out


@functools.lru_cache(maxsize=65536)
def _analysed(raw: str) -> str:
    return " ".join(_analyse_token(raw))


def index_text(text: str, japanese: bool | None = None) -> str:
    """`terms` as the one string the keyword index stores (space-separated)."""
    normalized = normalize(text)
    if normalized.isascii():  # a token's terms are joined once, then reused
        return " ".join(filter(None, map(_analysed, _ASCII_RAW_TOKEN.findall(normalized))))
    if CJK_RUN.search(normalized) is None:
        return " ".join(filter(None, map(_analysed, RAW_TOKEN.findall(normalized))))
    return " ".join(terms(text, japanese))


def _is_stopword(raw: str, cjk: bool, level: int) -> bool:
    return level == 0 if cjk else raw.lower() in INDEX_STOPWORDS


def query_groups(query: str) -> list[tuple[str, ...]]:
    """Per query token, its analysed terms; a compound identifier's whole form comes last (a CJK word is a
    group of its own)."""
    groups: dict[tuple[str, ...], None] = {}
    for raw, cjk, content in _tokens(query, query=True):
        analysed = (raw,) if cjk else _analyse_token(raw)
        if analysed and not _is_stopword(raw, cjk, content):
            groups.setdefault(analysed, None)
    return list(groups)


def query_terms(query: str) -> list[str]:
    """Distinct query terms, stopwords (and CJK particles) dropped unless nothing else is left."""
    seen: dict[str, None] = {}
    kept: dict[str, None] = {}
    for raw, cjk, content in _tokens(query, query=True):
        stop = _is_stopword(raw, cjk, content)
        for term in (raw,) if cjk else _analyse_token(raw):
            seen.setdefault(term, None)
            if not stop and term not in INDEX_STOPWORDS:
                kept.setdefault(term, None)
    return list(kept or seen)


def fts_match(query_terms_: list[str]) -> str:
    """An FTS5 MATCH expression that cannot be a syntax error: every term quoted, joined by OR."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in query_terms_)


def word_stem(word: str) -> str:
    """The stem used for highlighting: the same analysis as indexing, for one word."""
    analysed = _analyse_token(word)
    return analysed[0] if len(analysed) == 1 else word.lower()


def fact_groups(text: str) -> list[tuple[str, ...]]:
    """Per token of `text`, in reading order, its analysed terms (stems, a compound's parts and whole form, a
    CJK word), stopwords and CJK particles dropped: a key fact is found when its groups occur consecutively in
    an answer's groups, so "retried the request" holds "retries requests" and a CJK fact needs no spaces."""
    out: list[tuple[str, ...]] = []
    for raw, cjk, content in _tokens(text):
        analysed = (raw,) if cjk else _analyse_token(raw)
        if analysed and not _is_stopword(raw, cjk, content):
            out.append(analysed)
    return out


def salient_words(text: str) -> list[str]:
    """The words of `text` that say what it is about, as written, in order, each analysed form once: no
    stopwords (`CONTENT_STOPWORDS`), of CJK only the words that state a fact (nouns, adjectives: not 為る or
    出来る). A follow-up question's rewrite carries them
    from earlier turns (`answer/conversation.py`); the search analyses them again like any query."""
    seen: set[tuple[str, ...]] = set()
    out: list[str] = []
    for raw, cjk, level in _tokens(text):
        short = len(raw) < 2 and not raw.isdigit()
        if level < 2 if cjk else (raw.lower() in CONTENT_STOPWORDS or short):
            continue
        key = (raw,) if cjk else _analyse_token(raw)
        if key and key not in seen:
            seen.add(key)
            out.append(raw)
    return out
