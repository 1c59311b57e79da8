"""Ranked search over llms.txt links of many sites, in memory: BM25F over title, section, URL path,
description and (once fetched) page text.

Why these choices:
- BM25F, not a sum of per-field BM25: a word that appears in both title and URL is one piece of evidence, so
  weighted term frequencies are summed across fields first and saturated once.
- Field weights: title 5 (the author's name for the page; mid 3-8), section 2 and URL path 2 (a section
  label is shared by every link under it and a path mostly repeats the title, so each says less about one
  link than its title), description 1, page text 0.3 (long and fetched lazily: it should reorder near-ties,
  not outrank a page whose title names the topic).
- Scores are the share of the query's best possible BM25 score: every query term's saturation term
  `tf / (k1 + tf)` tends to 1, so `score / sum(idf)` lies in [0, 1). Statistics are global over all
  sources, so a strong match in one site outscores a weak one in another, and a filtered search scores the
  same as an unfiltered one.
"""

from __future__ import annotations

import heapq
import math
import re
import threading
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from citedocs.errors import InputError, NotFoundError
from citedocs.sources.llmstxt import DocLink
from citedocs.text.cjk import is_japanese
from citedocs.text.links import RAW_TOKEN, analyze, analyze_token, bigrams, tokenize

__all__ = ["MAX_K", "SiteHit", "SiteIndex", "site_is_japanese", "tokenize", "url_path_text"]

MAX_K = 50
FIELD_WEIGHTS = (5.0, 2.0, 2.0, 1.0, 0.3)  # title, section, url path, description, page text
FIELD_B = (0.3, 0.3, 0.3, 0.75, 0.75)  # short labels barely need length normalisation
K1 = 2.0
BIGRAM_WEIGHT = 0.5
_PAGE = 4
_SNIPPET_CHARS = 220
_SNIPPET_SCAN_CHARS = 300_000

_HEX_ID = re.compile(r"^[0-9a-f]{12,}$")
_FILE_SUFFIX = re.compile(r"(?:\.html?|\.mdx?|\.txt)+$", re.I)
_URL_PATH = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/]*")
_FRAGMENT_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")


def _field_terms(text: str, japanese: bool) -> tuple[tuple[str, ...], int]:
    """Unigram and bigram occurrences of one field, and its length in unigrams; `japanese`: the site's."""
    terms, stems = analyze(text, japanese)
    return (*terms, *bigrams(stems)), len(terms)


@lru_cache(maxsize=4096)
def _label_terms(text: str, japanese: bool) -> tuple[tuple[str, ...], int]:
    """`_field_terms` for short, often repeated labels (sections repeat for every link under them)."""
    return _field_terms(text, japanese)


def site_is_japanese(links: Sequence[DocLink]) -> bool:
    """One language per site, as per document in the index: a site whose titles, sections or descriptions
    hold kana is Japanese, so its titles of kanji only are Japanese words too, not Chinese bigrams."""
    return any(is_japanese(f"{link.title} {link.section} {link.description}") for link in links)


def url_path_text(url: str) -> str:
    path = _URL_PATH.sub("", url.split("#", 1)[0].split("?", 1)[0])
    segments = [_FILE_SUFFIX.sub("", s) for s in path.split("/")]
    return " ".join(s for s in segments if s and s.lower() != "index" and not _HEX_ID.match(s))


@dataclass(frozen=True)
class SiteHit:
    source: str
    title: str
    url: str
    description: str
    section: str
    score: float
    snippet: str


@dataclass
class _Entry:
    link: DocLink
    lengths: list[int]
    link_terms: frozenset[str]
    page_text: str = ""
    page_counts: Counter[str] = field(default_factory=Counter)


class _Segment:
    """One source's links. Title/section/path/description occurrences are append-only lists of
    `entry << 3 | field` codes (fast to build); page text, which comes and goes, has its own postings."""

    def __init__(self, links: Sequence[DocLink]) -> None:
        self.entries: list[_Entry] = []
        self.by_url: dict[str, int] = {}
        self.postings: defaultdict[str, list[int]] = defaultdict(list)
        self.page_postings: dict[str, dict[int, int]] = {}
        self.df: Counter[str] = Counter()
        self.length_totals = [0.0] * len(FIELD_WEIGHTS)
        self.pages = 0
        self._factors: tuple[tuple[float, ...], list[tuple[float, ...]]] = ((), [])
        self.japanese = japanese = site_is_japanese(links)
        postings = self.postings
        for link in links:
            if link.url in self.by_url:
                continue
            idx = self.by_url[link.url] = len(self.entries)
            lengths = [0] * len(FIELD_WEIGHTS)
            seen: set[str] = set()
            texts = (link.title, link.section, url_path_text(link.url), link.description)
            for f, text in enumerate(texts):
                if text:
                    terms, lengths[f] = (
                        _label_terms(text, japanese) if f < 3 else _field_terms(text, japanese)
                    )
                    code = idx << 3 | f
                    for term in terms:
                        postings[term].append(code)
                    seen.update(terms)
                    self.length_totals[f] += lengths[f]
            self.df.update(seen)
            self.entries.append(_Entry(link, lengths, frozenset(seen)))

    def field_factors(self, averages: tuple[float, ...]) -> list[tuple[float, ...]]:
        """Per entry, each field's weight over its BM25 length norm; cached until the averages change."""
        if self._factors[0] != averages:
            factors = [
                tuple(
                    w / (1.0 - b + b * length / avg)
                    for w, b, length, avg in zip(FIELD_WEIGHTS, FIELD_B, e.lengths, averages, strict=True)
                )
                for e in self.entries
            ]
            self._factors = (averages, factors)
        return self._factors[1]

    def weighted_tf(self, term: str, factors: list[tuple[float, ...]]) -> dict[int, float]:
        """BM25F's weighted, length-normalised term frequency of `term` in each entry that has it."""
        found: dict[int, float] = {}
        for code in self.postings.get(term, ()):
            idx = code >> 3
            found[idx] = found.get(idx, 0.0) + factors[idx][code & 7]
        for idx, tf in self.page_postings.get(term, {}).items():
            found[idx] = found.get(idx, 0.0) + tf * factors[idx][_PAGE]
        return found

    def set_page(self, idx: int, text: str) -> None:
        self._factors = ((), [])
        entry = self.entries[idx]
        for term in entry.page_counts:
            by_entry = self.page_postings[term]
            del by_entry[idx]
            if not by_entry:
                del self.page_postings[term]
            if term not in entry.link_terms:
                self.df[term] -= 1
        if entry.page_text:
            self.length_totals[_PAGE] -= entry.lengths[_PAGE]
            self.pages -= 1
        terms, length = _field_terms(text, self.japanese)
        counts = Counter(terms)
        entry.page_text, entry.page_counts, entry.lengths[_PAGE] = (
            (text, counts, length) if length else ("", Counter(), 0)
        )
        for term, tf in entry.page_counts.items():
            self.page_postings.setdefault(term, {})[idx] = tf
            if term not in entry.link_terms:
                self.df[term] += 1
        if length:
            self.length_totals[_PAGE] += length
            self.pages += 1


class SiteIndex:
    """Links of many llms.txt sources, searchable at once; thread-safe, rebuilt per source in milliseconds."""

    def __init__(self) -> None:
        self._segments: dict[str, _Segment] = {}
        self._lock = threading.RLock()

    def sources(self) -> list[str]:
        with self._lock:
            return list(self._segments)

    def add_source(self, source: str, links: Sequence[DocLink]) -> None:
        """Index the links of one source, replacing what it had; titles and descriptions only, no pages."""
        if not source.strip():
            raise InputError("A source needs a non-empty name.", "Pass the site's short name, e.g. 'hono'.")
        segment = _Segment(links)
        with self._lock:
            self._segments[source] = segment

    def remove_source(self, source: str) -> None:
        """Forget a source; removing one that is not indexed does nothing."""
        with self._lock:
            self._segments.pop(source, None)

    def add_page_text(self, source: str, url: str, text: str) -> None:
        """Let a fetched page's text count in ranking, below its title; replaces text added before."""
        with self._lock:
            segment = self._segment(source)
            idx = segment.by_url.get(url)
            if idx is None:
                raise NotFoundError(
                    f"{url} is not a link of source '{source}'.",
                    "Search the source first and use a URL it returns.",
                )
            segment.set_page(idx, text)

    def search(self, query: str, *, source: str | None = None, k: int = 5) -> list[SiteHit]:
        """The k best links for `query` (all sources, or one), best first, scores in [0, 1]."""
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
            raise InputError(
                f"k must be between 1 and {MAX_K}, got {k!r}.", f"Ask for at most {MAX_K} results."
            )
        terms, stems = analyze(query, query=True)
        weighted = dict.fromkeys(terms, 1.0)
        weighted.update(dict.fromkeys(bigrams(stems), BIGRAM_WEIGHT))
        if not weighted:
            return []
        with self._lock:
            segments = self._segments if source is None else {source: self._segment(source)}
            # a CJK query's other form (Japanese words beside Chinese bigrams) counts only where a site has it
            plain = set(analyze(query)[0])
            for term in [t for t in terms if t not in plain]:
                if not any(s.df.get(term) for s in self._segments.values()):
                    del weighted[term]
            ranked = self._rank(weighted, segments, k)
        marks = set(terms)
        return [
            SiteHit(
                name,
                e.link.title,
                e.link.url,
                e.link.description,
                e.link.section,
                round(score, 4),
                _snippet(e.link.description, e.page_text, marks),
            )
            for score, name, e in ranked
        ]

    def _segment(self, source: str) -> _Segment:
        segment = self._segments.get(source)
        if segment is None:
            known = ", ".join(sorted(self._segments)) or "none"
            raise NotFoundError(
                f"No indexed source named '{source}' (indexed: {known}).", "Run list_doc_sources."
            )
        return segment

    def _rank(
        self, weighted: dict[str, float], segments: dict[str, _Segment], k: int
    ) -> list[tuple[float, str, _Entry]]:
        everything = list(self._segments.values())
        n_docs = sum(len(s.entries) for s in everything)
        if n_docs == 0:
            return []
        totals = [sum(s.length_totals[f] for s in everything) for f in range(len(FIELD_WEIGHTS))]
        n_pages = sum(s.pages for s in everything)
        averages = tuple(t / (n_pages if f == _PAGE else n_docs) if t else 1.0 for f, t in enumerate(totals))
        best = 0.0
        scored: list[tuple[float, int, int, str, _Entry]] = []
        per_segment: list[dict[int, float]] = [{} for _ in segments]
        factors = [segment.field_factors(averages) for segment in segments.values()]
        for term, query_weight in weighted.items():
            df = sum(s.df.get(term, 0) for s in everything)
            idf = math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
            best += query_weight * idf
            for scores, segment, segment_factors in zip(per_segment, segments.values(), factors, strict=True):
                for idx, wtf in segment.weighted_tf(term, segment_factors).items():
                    scores[idx] = scores.get(idx, 0.0) + query_weight * idf * wtf / (K1 + wtf)
        for order, (scores, (name, segment)) in enumerate(zip(per_segment, segments.items(), strict=True)):
            scored.extend(
                (raw / best, -order, -idx, name, segment.entries[idx]) for idx, raw in scores.items()
            )
        top = heapq.nlargest(k, scored, key=lambda row: row[:3])
        return [(min(1.0, score), name, entry) for score, _, _, name, entry in top]


def _fragments(text: str) -> list[str]:
    return [f.strip() for f in _FRAGMENT_SPLIT.split(text[:_SNIPPET_SCAN_CHARS]) if f.strip()]


def _mark(fragment: str, marks: set[str]) -> str:
    def replace(match: re.Match[str]) -> str:
        word = match.group()
        return f"**{word}**" if marks.intersection(analyze_token(word)[0]) else word

    return RAW_TOKEN.sub(replace, fragment)


def _window(fragment: str, marks: set[str]) -> str:
    """At most _SNIPPET_CHARS of the fragment, starting a little before its first matching word."""
    if len(fragment) <= _SNIPPET_CHARS:
        return fragment
    first = next((m.start() for m in RAW_TOKEN.finditer(fragment) if marks & set(tokenize(m.group()))), 0)
    start = max(0, min(first - 40, len(fragment) - _SNIPPET_CHARS))
    start = fragment.rfind(" ", 0, start) + 1 if start else 0
    cut = fragment[start : start + _SNIPPET_CHARS]
    cut = cut[: cut.rfind(" ")] if len(cut) == _SNIPPET_CHARS and " " in cut else cut
    return ("…" if start else "") + cut + ("…" if start + len(cut) < len(fragment) else "")


def _snippet(description: str, page_text: str, marks: set[str]) -> str:
    """The description's or page's fragment that matches the most distinct query terms, terms in **bold**."""
    candidates = _fragments(description) + _fragments(page_text)
    if not candidates:
        return ""
    best, best_hits = candidates[0], 0
    for fragment in candidates:
        hits = len(marks.intersection(tokenize(fragment)))
        if hits > best_hits:
            best, best_hits = fragment, hits
    return _mark(_window(best, marks), marks)
