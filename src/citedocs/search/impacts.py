"""FTS5's bm25() from precomputed impacts: postings as numpy arrays, scores summed per query term.

A segment holds, per term, its postings (rows ascending), each posting's weighted term frequency and its
BM25 impact, tf·(k1+1) / (tf + k1·(1 − b + b·D/avgdl)), the term weight without the idf. A query sums
idf × impact (float32 products) per row over all its terms' postings in one `bincount`: the work is the
query terms' postings, not a formula per posting as FTS5 evaluates it in C for every matching row.

Scores are then exact: the best candidates by those approximate sums are rescored in float64 with FTS5's own
expression, in its order of operations (idf from the live N and df, D/avgdl from the live statistics), so
each score is bit for bit what `-bm25(chunks_fts, 2.0, 1.0)` returns. The candidate set is certified: a row
left out can score at most its approximate sum times (1 + the impacts' relative error, which grows with the
drift of avgdl since the segment was built); while that bound reaches the k-th exact score the candidate
set is doubled, so the top k and their order (ties by rowid) are FTS5's.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from citedocs.search.sketches import empty_sketches, row_sketches, term_bits
from citedocs.store.records import KeywordRow

K1, B = 1.2, 0.75  # FTS5's bm25() constants

__all__ = ["K1", "B", "Segment", "Stats", "build_segment", "document_count", "merge", "rank", "with_impacts"]


@dataclass(frozen=True, slots=True)
class Segment:
    """Immutable postings for a run of chunks; `dead` lists local rows deleted since it was built."""

    vocab: dict[str, int]
    offsets: np.ndarray  # int64, one more than the terms: term t's postings are offsets[t]:offsets[t + 1]
    rows: np.ndarray  # int32 local rows, ascending within each term
    tf: np.ndarray  # float32 heading_weight × count in the heading + count in the body
    impacts: np.ndarray  # float32 tf·(k1+1) / (tf + k1·(1 − b + b·D/avgdl)) at `avgdl`
    avgdl: float
    rowids: np.ndarray  # int64 chunk rowid per local row, ascending
    lengths: np.ndarray  # int32 FTS5 tokens per row (D)
    sources: np.ndarray  # int32 source id per row
    formats: np.ndarray  # int16 index into format_names per row
    format_names: tuple[str | None, ...]
    dead: np.ndarray  # int32 sorted local rows no longer in the index
    sketch: np.ndarray  # uint64 (rows, SKETCH_WORDS): each row's terms as bits (search/sketches.py)

    def __len__(self) -> int:
        return int(self.rowids.shape[0])

    @property
    def alive(self) -> int:
        return len(self) - int(self.dead.shape[0])

    @property
    def alive_length(self) -> int:
        return int(self.lengths.sum(dtype=np.int64)) - int(self.lengths[self.dead].sum(dtype=np.int64))

    @property
    def nbytes(self) -> int:
        arrays = (self.offsets, self.rows, self.tf, self.impacts, self.rowids, self.lengths, self.sources)
        return sum(int(a.nbytes) for a in (*arrays, self.formats, self.dead, self.sketch))

    def postings(self, term: str) -> slice | None:
        tid = self.vocab.get(term)
        if tid is None:
            return None
        return slice(int(self.offsets[tid]), int(self.offsets[tid + 1]))

    def df(self, span: slice | None) -> int:
        """Live rows holding the term of `span` (0 for None: a term this segment lacks)."""
        if span is None:
            return 0
        n: int = span.stop - span.start
        if n and self.dead.shape[0]:
            rows = self.rows[span]
            pos = np.searchsorted(rows, self.dead)
            inside = pos < n
            n -= int(np.count_nonzero(rows[pos[inside]] == self.dead[inside]))
        return n

    def without(self, rowids: np.ndarray) -> Segment:
        """This segment with the rows of these chunk rowids marked dead (rowids it lacks are ignored)."""
        pos = np.searchsorted(self.rowids, rowids)
        inside = pos < len(self)
        pos = pos[inside][self.rowids[pos[inside]] == rowids[inside]]
        if pos.shape[0] == 0:
            return self
        return replace(self, dead=np.union1d(self.dead, pos.astype(np.int32)))


@dataclass(frozen=True, slots=True)
class Stats:
    """What FTS5's bm25() reads of the whole table: live rows and their total length in tokens."""

    rows: int
    tokens: int

    @property
    def avgdl(self) -> float:
        return self.tokens / self.rows if self.rows else 0.0

    @staticmethod
    def of(segments: Sequence[Segment]) -> Stats:
        return Stats(sum(s.alive for s in segments), sum(s.alive_length for s in segments))


def build_segment(
    rows: Iterable[KeywordRow], tokens: Callable[[str], list[str]], heading_weight: float
) -> Segment:
    """Postings of `rows` (in ascending rowid order); impacts at the segment's own avgdl until `with_impacts`."""
    vocab: dict[str, int] = {}
    # Typed arrays, not lists: at 100x SciFact the postings are ~60M numbers, 8 bytes each here instead of ~36.
    term_ids, freqs, counts = array("i"), array("f"), array("q")
    rowids, lengths, sources, formats = array("q"), array("i"), array("i"), array("h")
    format_codes: dict[str | None, int] = {}
    setdefault = vocab.setdefault
    for rowid, source_id, fmt, heading, body in rows:
        head_terms = tokens(heading or "")
        body_terms = tokens(body or "")
        tf: Counter[str] = Counter(body_terms)
        for term in head_terms:
            tf[term] += heading_weight  # type: ignore[assignment]
        term_ids.extend(setdefault(term, len(vocab)) for term in tf)
        freqs.extend(tf.values())
        counts.append(len(tf))
        rowids.append(rowid)
        lengths.append(len(head_terms) + len(body_terms))
        sources.append(source_id)
        formats.append(format_codes.setdefault(fmt, len(format_codes)))
    n_terms = len(vocab)
    tids = np.frombuffer(term_ids, dtype=np.int32)
    local_rows = np.repeat(np.arange(len(rowids), dtype=np.int32), np.frombuffer(counts, dtype=np.int64))
    order = np.argsort(tids, kind="stable")  # by term, rows stay ascending within each term
    offsets = np.zeros(n_terms + 1, dtype=np.int64)
    np.cumsum(np.bincount(tids, minlength=n_terms), out=offsets[1:])
    length_array = np.frombuffer(lengths, dtype=np.int32).copy()
    total = int(length_array.sum(dtype=np.int64))
    segment = Segment(
        vocab=vocab,
        offsets=offsets,
        rows=local_rows[order],
        tf=np.frombuffer(freqs, dtype=np.float32)[order],
        impacts=np.zeros(0, dtype=np.float32),
        avgdl=0.0,
        rowids=np.frombuffer(rowids, dtype=np.int64).copy(),
        lengths=length_array,
        sources=np.frombuffer(sources, dtype=np.int32).copy(),
        formats=np.frombuffer(formats, dtype=np.int16).copy(),
        format_names=tuple(format_codes),
        dead=np.zeros(0, dtype=np.int32),
        sketch=row_sketches(len(rowids), local_rows, term_bits(vocab)[tids]),
    )
    return with_impacts(segment, total / len(rowids) if rowids else 1.0)


def with_impacts(segment: Segment, avgdl: float) -> Segment:
    """The segment with its impacts computed for `avgdl` (float64 math, stored as float32)."""
    tf = segment.tf.astype(np.float64)
    lengths = segment.lengths[segment.rows].astype(np.float64)
    impacts = (tf * (K1 + 1.0)) / (tf + K1 * (1 - B + B * lengths / avgdl))
    return replace(segment, impacts=impacts.astype(np.float32), avgdl=avgdl)


def merge(segments: Sequence[Segment], avgdl: float) -> Segment:
    """One segment holding the live rows of `segments` (rows by rowid), impacts at `avgdl`."""
    vocab: dict[str, int] = {}
    names: dict[str | None, int] = {}
    parts: dict[str, list[np.ndarray]] = {
        key: [] for key in ("terms", "rows", "tf", "rowids", "lengths", "sources", "formats", "sketch")
    }
    base = 0
    for segment in segments:
        keep = np.ones(len(segment), dtype=np.bool_)
        keep[segment.dead] = False
        local = (np.cumsum(keep) - 1 + base).astype(np.int64)
        term_map = np.asarray([vocab.setdefault(t, len(vocab)) for t in segment.vocab], dtype=np.int32)
        format_map = np.asarray(
            [names.setdefault(n, len(names)) for n in segment.format_names], dtype=np.int16
        )
        tids = np.repeat(np.arange(len(segment.vocab), dtype=np.int32), np.diff(segment.offsets))
        live = keep[segment.rows]
        parts["terms"].append(term_map[tids[live]])
        parts["rows"].append(local[segment.rows[live]])
        parts["tf"].append(segment.tf[live])
        parts["rowids"].append(segment.rowids[keep])
        parts["lengths"].append(segment.lengths[keep])
        parts["sources"].append(segment.sources[keep])
        parts["formats"].append(
            format_map[segment.formats[keep]] if format_map.shape[0] else segment.formats[keep]
        )
        parts["sketch"].append(segment.sketch[keep])
        base += int(keep.sum())
    joined = {key: np.concatenate(value) if value else np.zeros(0) for key, value in parts.items()}
    by_rowid = np.argsort(joined["rowids"], kind="stable")
    new_row = np.empty_like(by_rowid)
    new_row[by_rowid] = np.arange(by_rowid.shape[0])
    rows = new_row[joined["rows"].astype(np.int64)].astype(np.int32)
    terms = joined["terms"].astype(np.int32)
    order = np.lexsort((rows, terms))
    offsets = np.zeros(len(vocab) + 1, dtype=np.int64)
    np.cumsum(np.bincount(terms, minlength=len(vocab)), out=offsets[1:])
    merged = Segment(
        vocab=vocab,
        offsets=offsets,
        rows=rows[order],
        tf=joined["tf"].astype(np.float32)[order],
        impacts=np.zeros(0, dtype=np.float32),
        avgdl=0.0,
        rowids=joined["rowids"].astype(np.int64)[by_rowid],
        lengths=joined["lengths"].astype(np.int32)[by_rowid],
        sources=joined["sources"].astype(np.int32)[by_rowid],
        formats=joined["formats"].astype(np.int16)[by_rowid],
        format_names=tuple(names),
        dead=np.zeros(0, dtype=np.int32),
        sketch=(np.concatenate(parts["sketch"]) if parts["sketch"] else empty_sketches())[by_rowid],
    )
    return with_impacts(merged, avgdl)


def document_count(segments: Sequence[Segment], term: str) -> int:
    total = 0
    for segment in segments:
        span = segment.postings(term)
        if span is not None:
            total += segment.df(span)
    return total


def idf(rows: int, df: int) -> float:
    """FTS5's idf: log((N − n + 0.5) / (n + 0.5)), clamped to 1e-6 where it would be ≤ 0."""
    value = math.log((rows - df + 0.5) / (df + 0.5))
    return value if value > 0.0 else 1e-6


def rank(
    segments: Sequence[Segment],
    stats: Stats,
    terms: Sequence[str],
    k: int,
    allowed: Callable[[Segment], np.ndarray | None] | None = None,
) -> list[tuple[int, float]]:
    """(chunk rowid, FTS5 bm25 score) best first, ties by rowid; `terms` are index terms, each an FTS5 phrase
    of one token (repeats count again, as FTS5 counts a repeated phrase). `allowed` gives a segment's row mask.

    Every query term's postings are scored in one bincount and looked up for the exact scores in one slot
    map, not term by term: SciFact, 9 terms a query, 0.57x the time a ranking took at 1x, 0.58x at 10x,
    0.47x at 100x (bench/studies/rank_versions.py)."""
    if k <= 0 or stats.rows == 0 or not terms:
        return []
    located = [_Postings.of(s, terms) for s in segments]
    dfs = [sum(p.df[i] for p in located) for i in range(len(terms))]
    idfs = np.asarray([idf(stats.rows, df) for df in dfs], dtype=np.float64)
    avgdl = stats.avgdl
    float_error = (len(terms) + 4) * 2.0**-23
    partial = []
    for segment, postings in zip(segments, located, strict=True):
        scores = np.bincount(postings.rows, weights=postings.weights(segment, idfs), minlength=len(segment))
        if segment.dead.shape[0]:
            scores[segment.dead] = 0.0
        mask = allowed(segment) if allowed is not None else None
        if mask is not None:
            scores[~mask] = 0.0
        drift = max(0.0, avgdl / segment.avgdl - 1.0) if segment.avgdl else 0.0
        partial.append((segment, postings, scores, drift + float_error))
    want = k + max(16, k // 4)
    while True:
        exact_parts, rowid_parts = [], []
        bound = 0.0
        for segment, postings, scores, error in partial:
            floor = 0.0
            if scores.shape[0] > want:
                # the want-th best sum; partitioning the negated sums puts it near the front, which numpy
                # finds in 7 us where the same rank counted from the back of mostly-zero sums took 50; in
                # place: a copy of the sums per query cost 2% of a ranking at 1x, 5% at 10x, 7% at 100x
                negated = np.negative(scores)
                negated.partition(want - 1)
                floor = -float(negated[want - 1])
            if floor > 0.0:  # rows below it may have matched too
                bound = max(bound, floor * (1.0 + error))
                candidates = np.flatnonzero(scores >= floor)
            else:
                candidates = np.flatnonzero(scores)
            exact_parts.append(_exact(segment, postings, idfs, candidates, avgdl))
            rowid_parts.append(segment.rowids[candidates])
        exact = np.concatenate(exact_parts)
        rowids = np.concatenate(rowid_parts)
        order = np.lexsort((rowids, -exact))[:k]
        if bound == 0.0 or (order.shape[0] >= k and float(exact[order[-1]]) > bound):
            return list(zip(rowids[order].tolist(), exact[order].tolist(), strict=True))
        want *= 2


@dataclass(frozen=True, slots=True)
class _Postings:
    """A query's postings in one segment, all terms in one run (a repeated term's postings once per repeat):
    `rows` their rows; term i's are rows[ends[i] - lengths[i]:ends[i]], from the segment's `starts[i]` on."""

    starts: np.ndarray
    lengths: np.ndarray
    ends: np.ndarray
    rows: np.ndarray
    df: list[int]

    @staticmethod
    def of(segment: Segment, terms: Sequence[str]) -> _Postings:
        spans = [segment.postings(t) or slice(0, 0) for t in terms]
        lengths = np.asarray([s.stop - s.start for s in spans], dtype=np.int64)
        df = lengths.tolist() if not segment.dead.shape[0] else [segment.df(s) for s in spans]
        rows = np.concatenate([segment.rows[s] for s in spans])
        starts = np.asarray([s.start for s in spans], dtype=np.int64)
        return _Postings(starts=starts, lengths=lengths, ends=np.cumsum(lengths), rows=rows, df=df)

    def weights(self, segment: Segment, idfs: np.ndarray) -> np.ndarray:
        """Each posting's idf × impact (float32), term by term into one array: no index array is built."""
        out = np.empty(self.rows.shape[0], dtype=np.float32)
        for start, length, end, weight in zip(
            self.starts.tolist(),
            self.lengths.tolist(),
            self.ends.tolist(),
            idfs.astype(np.float32),
            strict=True,
        ):
            np.multiply(segment.impacts[start : start + length], weight, out=out[end - length : end])
        return out

    def locate(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(query term, index into the segment's arrays) of the postings at these positions of `rows`."""
        term = np.searchsorted(self.ends, positions, side="right")
        return term, self.starts[term] + positions - (self.ends - self.lengths)[term]


def _exact(
    segment: Segment, postings: _Postings, idfs: np.ndarray, candidates: np.ndarray, avgdl: float
) -> np.ndarray:
    """FTS5's bm25 sum for these rows (ascending) in float64, term by term in query order, as sqlite computes it.

    A term a row lacks adds idf·0 = 0.0, exactly as FTS5's loop over phrases does; reducing the (terms ×
    rows) matrix over its first axis adds row after row, the same order of additions."""
    freqs = np.zeros((idfs.shape[0], candidates.shape[0]), dtype=np.float64)
    if candidates.shape[0]:
        slot = np.zeros(len(segment), dtype=np.int32)  # a candidate's column + 1; 0 for other rows
        slot[candidates] = np.arange(1, candidates.shape[0] + 1, dtype=np.int32)
        column = slot[postings.rows]
        hits = np.flatnonzero(column)
        term, at = postings.locate(hits)
        freqs[term, column[hits] - 1] = segment.tf[at]
    norm = K1 * (1 - B + B * segment.lengths[candidates].astype(np.float64) / avgdl)
    contributions = idfs[:, None] * ((freqs * (K1 + 1.0)) / (freqs + norm))
    score: np.ndarray = np.add.reduce(contributions, axis=0)
    return score
