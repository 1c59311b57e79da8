"""Snippets: the window of a passage with the most distinct query terms, matches marked **like this**.

Latin words are marked when they analyse to a query term (its stem, an identifier whole); Chinese, Japanese
and Korean text, which has no spaces, when the analyzer's word there (SudachiPy's for Japanese, a character
bigram otherwise) is a query term: `重要度` is marked in 「バグの重要度は」, and the overlapping bigrams of
`重要度` asked as Chinese mark the word once, whole.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection
from dataclasses import dataclass

from citedocs.text.analyzer import word_stem
from citedocs.text.cjk import RAW_CJK_RUN, cjk_spans, has_cjk, is_japanese, normalize, sudachi_in_use

_PLAIN = re.compile(r"\w+")


@functools.lru_cache(maxsize=256)
def _candidates(wanted: frozenset[str], folded: bool) -> re.Pattern[str]:
    """Words that could analyse to a wanted term: stems are checked on these only (a measured 10x saving).

    `folded`: the pattern is matched against the lower-cased text (ASCII text: the same matches as
    IGNORECASE, in half the time, and a first-letter look-ahead skips most words at once)."""
    plain = sorted({re.escape(t[:4]) for t in wanted if _PLAIN.fullmatch(t)}, key=len, reverse=True)
    whole = sorted({re.escape(t) for t in wanted if not _PLAIN.fullmatch(t)}, key=len, reverse=True)
    parts = [f"(?<![\\w.\\-])(?:{'|'.join(whole)})(?![\\w])"] if whole else []
    if plain:
        firsts = "".join(sorted({re.escape(t[0]) for t in wanted if _PLAIN.fullmatch(t)}))
        ahead = f"(?=[{firsts}])" if folded else ""
        parts.append(f"\\b{ahead}(?:{'|'.join(plain)})\\w*")
    return re.compile("|".join(parts) or r"(?!)", 0 if folded else re.IGNORECASE)


_WORD_REST = re.compile(r"\w*")
# Characters that `str.lower` and IGNORECASE treat differently for ASCII letters: İ lowers to two characters,
# ı and ſ match `i` and `s` under IGNORECASE only.
_FOLD_UNSAFE = ("\u0131", "\u017f")


@dataclass(frozen=True, slots=True)
class _Plan:
    """What `_spans` needs of one query's Latin terms, worked out once per query, not once per passage."""

    findable: bool  # lower-case ASCII terms: `str.find` may be used (`_findable`)
    wholes: tuple[str, ...]  # identifiers, longest first (the alternation's order)
    prefixes: tuple[str, ...]  # the first four characters of the words


@functools.lru_cache(maxsize=256)
def _plan(wanted: frozenset[str]) -> _Plan:
    plain = [t for t in wanted if _PLAIN.fullmatch(t)]
    return _Plan(
        findable=all(t.isascii() and t == t.lower() for t in wanted),
        wholes=tuple(sorted((t for t in wanted if not _PLAIN.fullmatch(t)), key=len, reverse=True)),
        prefixes=tuple({t[:4] for t in plain}),
    )


def _spans(text: str, wanted: frozenset[str], folded: bool) -> list[tuple[int, int]]:
    """(start, end) of the `_candidates` matches, in order.

    For lower-case ASCII query terms, the same spans are found with `str.find` on the lower-cased text (where
    it keeps every position, as IGNORECASE matches): the regex alternation is compiled for each new query
    (1-2 ms) and tried at every position; this finds each identifier with its look-around rules, then the
    words (runs of \\w) that start with a wanted prefix, and keeps the first match at each position as the
    alternation would (identifiers, longest first, before words), skipping those inside an earlier match."""
    lowered = text.lower()
    plan = _plan(wanted)
    if not (plan.findable and _text_findable(text, lowered)):
        return [m.span() for m in _candidates(wanted, folded).finditer(lowered if folded else text)]
    at: dict[int, int] = {}
    size = len(lowered)
    for whole in plan.wholes:
        pos = lowered.find(whole)
        while pos >= 0:
            end = pos + len(whole)
            if pos not in at:
                before = lowered[pos - 1] if pos else " "
                after = lowered[end] if end < size else " "
                if not (before.isalnum() or before in "_.-") and not (after.isalnum() or after == "_"):
                    at[pos] = end
            pos = lowered.find(whole, pos + 1)
    word_end = _WORD_REST.match
    for prefix in plan.prefixes:
        pos = lowered.find(prefix)
        while pos >= 0:
            if pos not in at:
                before = lowered[pos - 1] if pos else " "
                if not (before.isalnum() or before == "_"):
                    found = word_end(lowered, pos)
                    at[pos] = found.end() if found else pos + len(prefix)
            pos = lowered.find(prefix, pos + 1)
    spans: list[tuple[int, int]] = []
    cursor = 0
    for start, end in sorted(at.items()):
        if start >= cursor:
            spans.append((start, end))
            cursor = end
    return spans


def _findable(text: str, lowered: str, wanted: frozenset[str]) -> bool:
    """Whether `_spans` may use `str.find`: lower-case ASCII terms, and a text whose lower-cased form keeps
    every position and matches as IGNORECASE would."""
    return _plan(wanted).findable and _text_findable(text, lowered)


def _text_findable(text: str, lowered: str) -> bool:
    return text.isascii() or (len(lowered) == len(text) and not any(c in text for c in _FOLD_UNSAFE))


def _cjk_found(text: str, wanted: set[str]) -> list[tuple[int, int, str]]:
    """(start, end, term) of the CJK words of `text` that are query terms, positions in `text`.

    Only runs holding a wanted term's first two characters are analysed (SudachiPy costs ~10x the Latin
    snippet; a word's normalised form may differ from how it is written, `サーバ` is `サーバー`, but rarely in
    its start). A passage without kana is cut both ways when SudachiPy is in use: its document may be
    Japanese (analysed as Japanese words) or Chinese (bigrams), as a query of ideographs is asked both ways."""
    starts = {t[:2] for t in wanted}
    japanese = is_japanese(text)
    found: list[tuple[int, int, str]] = []
    for match in RAW_CJK_RUN.finditer(text):
        raw = match.group()
        run = normalize(raw)
        if not any(start in run for start in starts):
            continue
        at = _positions(raw, run)
        spans = set(cjk_spans(run, japanese))
        if not japanese and sudachi_in_use():
            spans.update(cjk_spans(run, True))
        for s, e, word, level in spans:
            # words that state a fact (nouns, adjectives): not grammar, nor the する of 「変更するには」
            if level == 2 and word in wanted:
                found.append((match.start() + at[s], match.start() + at[e], word))
    return found


def _positions(raw: str, run: str) -> list[int]:
    """For each position in `run` (`raw` NFKC-normalised), the position in `raw`: the same but where NFKC
    changed the length (half-width kana with a voiced mark, compatibility ideographs)."""
    if len(raw) == len(run):
        return list(range(len(run) + 1))
    at = [-1] * (len(run) + 1)
    for i in range(len(raw) + 1):  # the last raw position whose normalised prefix has each length
        at[min(len(normalize(raw[:i])), len(run))] = i
    for p in range(1, len(run) + 1):  # a length no prefix has (inside one character's expansion)
        at[p] = max(at[p], at[p - 1])
    return at


@functools.lru_cache(maxsize=256)
def _latin(wanted: frozenset[str]) -> tuple[frozenset[str], bool]:
    """The query terms that are not CJK, and whether they are all lower case."""
    latin = frozenset(t for t in wanted if not has_cjk(t))
    return latin, all(t == t.lower() for t in latin)


# A word's stem for highlighting, remembered: the words of passages repeat across searches.
_word_stem = functools.lru_cache(maxsize=65536)(word_stem)


def make_snippet(text: str, query_terms: Collection[str], width: int = 240) -> str:
    wanted = frozenset(query_terms)
    latin, lower = _latin(wanted)
    found: list[tuple[int, int, str]] = []
    if latin:
        for start, end in _spans(text, latin, lower and text.isascii()):
            word = text[start:end]
            low = word.lower()
            key = low if low in latin else _word_stem(word)
            if key in latin:
                found.append((start, end, key))
    if len(latin) < len(wanted) and not text.isascii():
        found = sorted(found + _cjk_found(text, set(wanted - latin)))
    if not found:
        return _trim(text, 0, width)
    span = width - width // 4  # the window shown starts width/4 before the best run of matches
    best_start, best_score = found[0][0], -1
    right = 0
    counts: dict[str, int] = {}
    for left in range(len(found)):
        while right < len(found) and found[right][1] <= found[left][0] + span:
            counts[found[right][2]] = counts.get(found[right][2], 0) + 1
            right += 1
        if len(counts) > best_score:
            best_start, best_score = found[left][0], len(counts)
        key = found[left][2]
        counts[key] -= 1
        if not counts[key]:
            del counts[key]
    start = max(0, best_start - width // 4)
    space = text.rfind(" ", 0, start)
    start = space + 1 if start > 0 and space >= 0 and start - space < 30 else start
    end = min(len(text), start + width)
    marked = []
    cursor = start
    for s, e in _merged(found):
        if s < cursor or e > end:
            continue
        marked.append(text[cursor:s])
        marked.append(f"**{text[s:e]}**")
        cursor = e
    marked.append(text[cursor:end])
    body = " ".join("".join(marked).split())
    return ("…" if start > 0 else "") + body + ("…" if end < len(text) else "")


def _merged(found: list[tuple[int, int, str]]) -> list[tuple[int, int]]:
    """The spans to mark: overlapping or touching matches as one (CJK bigrams overlap, CJK words touch;
    Latin matches never do, so their marks are as before)."""
    out: list[tuple[int, int]] = []
    for s, e, _ in found:
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def _trim(text: str, start: int, width: int) -> str:
    body = " ".join(text[start : start + width].split())
    return body + ("…" if len(text) > start + width else "")
