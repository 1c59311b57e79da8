"""The keyword index in memory: BM25 impacts (search/impacts.py) kept in step with the store.

The store stays the source of truth. The first keyword search starts a build in a background thread and is
answered by the store's own BM25 (FTS5, or PostgreSQL's SQL) meanwhile; so is any search while the index
is not current and cannot be made current at once. Each search first asks the store whether its generation
moved (one indexed read); when it did, the chunk change log says which chunks came and went since the
index's position, and a small change becomes a new segment and a list of dead rows on the spot. A large one
(or a log that no longer reaches back) rebuilds the index in the background: searches meanwhile use the
store, and the new index replaces the old in one assignment. Small segments are merged once there are
several; when added or dead rows grow past a fifth of the index, it is rebuilt in the background while the
current one (brought up to date incrementally) keeps answering. Each build of a SQLite index is saved beside
it (search/keyword_file.py), and a process that opens the index loads that and catches up by the change log.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from citedocs.search.impacts import Segment, Stats, build_segment, document_count, merge, rank, with_impacts
from citedocs.search.keyword_file import load_segment, save_segment
from citedocs.search.sketches import as_ints
from citedocs.store import Store
from citedocs.store.records import KeywordRow

__all__ = ["KeywordIndex", "KeywordView"]

SYNC_CHANGES = 5_000  # chunks added or removed that a search applies itself; more go to a background build
MAX_SEGMENTS = 6  # small segments beyond the first before they are merged into one
REBUILD_FRACTION = 0.2  # added or dead rows, as a share of the first segment, that trigger a rebuild


@dataclass(frozen=True, slots=True)
class _State:
    segments: tuple[Segment, ...]
    stats: Stats
    seq: int  # change-log position the segments reflect
    generation: int  # store generation when last checked


class KeywordView:
    """One search's look at the index: every question it asks sees the same segments."""

    def __init__(self, store: Store, state: _State) -> None:
        self.store = store
        self.state = state

    def ranking(
        self,
        terms: Sequence[str],
        k: int,
        *,
        source_ids: Sequence[int] | None = None,
        formats: Sequence[str] | None = None,
    ) -> list[tuple[int, float]] | None:
        tokens: list[str] = []
        for term in terms:
            parts = self.store.keyword_terms(term)
            if len(parts) != 1:  # FTS5 would search these as a phrase: positions this index does not keep
                return None
            tokens.append(parts[0])
        return rank(self.state.segments, self.state.stats, tokens, k, _filter(source_ids, formats))

    def sketches(self, rowids: Sequence[int]) -> list[int | None]:
        """Each chunk's term sketch (search/sketches.py) as an integer; None for a chunk this index lacks."""
        out: list[int | None] = [None] * len(rowids)
        wanted = np.asarray(rowids, dtype=np.int64)
        for segment in self.state.segments:
            if not len(segment):
                continue
            pos = np.minimum(np.searchsorted(segment.rowids, wanted), len(segment) - 1)
            found = segment.rowids[pos] == wanted
            if segment.dead.shape[0]:
                found &= ~np.isin(pos, segment.dead)
            where = np.flatnonzero(found).tolist()
            for i, sketch in zip(where, as_ints(segment.sketch[pos[where]]), strict=True):
                out[i] = sketch
        return out

    def document_counts(self, terms: Sequence[str]) -> dict[str, int]:
        out = {}
        for term in terms:
            parts = self.store.keyword_terms(term)
            out[term] = document_count(self.state.segments, parts[0]) if len(parts) == 1 else 0
        return out


class KeywordIndex:
    """BM25 over the store's keyword terms, from memory; `ranking` returns None when the store must answer."""

    def __init__(
        self,
        store: Store,
        heading_weight: float = 2.0,
        *,
        sync_changes: int = SYNC_CHANGES,
        rebuild_fraction: float = REBUILD_FRACTION,
        enabled: bool = True,
        saved: Path | None = None,
    ) -> None:
        """`saved`: the SQLite database file whose builds are saved beside it and loaded on first use
        (search/keyword_file.py); None keeps the index in memory only."""
        self.store = store
        self.saved = saved
        self._load_tried = saved is None
        self.enabled = enabled
        self.heading_weight = heading_weight
        self.sync_changes = sync_changes
        self.rebuild_fraction = rebuild_fraction
        self._state: _State | None = None
        self._update = threading.Lock()  # one thread applies changes; the others use the store meanwhile
        self._builder: threading.Thread | None = None
        self._builder_lock = threading.Lock()
        self._stale = False
        self.load_seconds: float | None = None
        self.builds = 0
        self.last_error: str | None = None

    # -- what search uses --------------------------------------------------------------------------
    def view(self) -> KeywordView | None:
        """The index as of the store's latest generation (one cheap check), or None: ask the store."""
        state = self.current()
        return None if state is None else KeywordView(self.store, state)

    def ranking(
        self,
        terms: Sequence[str],
        k: int,
        *,
        source_ids: Sequence[int] | None = None,
        formats: Sequence[str] | None = None,
    ) -> list[tuple[int, float]] | None:
        """(chunk rowid, BM25 score) best first, equal to the store's `keyword_search`; None: ask the store."""
        view = self.view()
        return None if view is None else view.ranking(terms, k, source_ids=source_ids, formats=formats)

    def document_counts(self, terms: Sequence[str]) -> dict[str, int] | None:
        """Chunks holding each term (as `Store.term_document_counts`); None when not current."""
        view = self.view()
        return None if view is None else view.document_counts(terms)

    def current(self) -> _State | None:
        """The index as of the store's latest generation, or None (a build was started or is running)."""
        state = self._state
        if state is None and self.enabled and not self._load_tried:
            state = self._load()
        if state is None:
            if self.enabled:
                self.start_build()
            return None
        changed, generation = self.store.changed_since(state.generation)
        if not changed:
            return state
        if self._stale:
            self.start_build(force=True)  # no-op while it runs; restarts one that failed
            return None
        if not self._update.acquire(blocking=False):
            return state  # another thread is applying it: this search is concurrent with that write anyway
        try:
            state = self._state
            if state is None:
                return None
            if state.generation == generation:
                return state
            return self._catch_up(state, generation)
        finally:
            self._update.release()

    # -- keeping it current ------------------------------------------------------------------------
    def _catch_up(self, state: _State, generation: int) -> _State | None:
        changes = self.store.keyword_changes(state.seq)
        if changes is None or len(changes.added) + len(changes.removed) > self.sync_changes:
            self._stale = True  # until the rebuild lands, the store answers (no log re-read per search)
            self.start_build(force=True)
            return None
        segments = list(state.segments)
        if changes.removed:
            removed = np.asarray(sorted(changes.removed), dtype=np.int64)
            segments = [s.without(removed) for s in segments]
        if changes.added:
            segments.append(self._segment(changes.added))
        segments = segments[:1] + [s for s in segments[1:] if s.alive]
        stats = Stats.of(segments)
        avgdl = stats.avgdl or 1.0
        if changes.added:
            segments[-1] = with_impacts(segments[-1], avgdl)
        if len(segments) > MAX_SEGMENTS + 1:
            segments = [segments[0], merge(segments[1:], avgdl)]
        new = _State(tuple(segments), stats, changes.seq, generation)
        self._state = new
        first = segments[0]
        grown = sum(len(s) for s in segments[1:]) + int(first.dead.shape[0])
        if grown > self.rebuild_fraction * max(len(first), 1):
            self.start_build(force=True)
        return new

    def _load(self) -> _State | None:
        """The saved index, if this database's (once per process; the first search waits for it)."""
        with self._builder_lock:
            if not self._load_tried and self.saved is not None:
                self._load_tried = True
                started = time.perf_counter()
                loaded = load_segment(self.store, self.saved)
                if loaded is not None:
                    segment, seq = loaded
                    with self._update:
                        if self._state is None:  # generation -1: the first check catches up by the log
                            self._state = _State((segment,), Stats.of([segment]), seq, -1)
                    self.load_seconds = time.perf_counter() - started
        return self._state

    def _segment(self, rows: Iterable[KeywordRow]) -> Segment:
        return build_segment(rows, self.store.keyword_terms, self.heading_weight)

    def start_build(self, *, force: bool = False) -> None:
        """Build the whole index from the store in a background thread (one at a time)."""
        with self._builder_lock:
            if self._builder is not None and self._builder.is_alive():
                return
            if self._state is not None and not force:
                return
            self._builder = threading.Thread(target=self._build, name="citedocs-keyword-index", daemon=True)
            self._builder.start()

    def _build(self) -> None:
        started = time.perf_counter()
        try:
            generation = self.store.changed_since(-1)[1]
            with self.store.keyword_snapshot() as (seq, rows):
                segment = self._segment(rows)
            state = _State((segment,), Stats.of([segment]), seq, generation)
            with self._update:
                self._state = state
                self._stale = False
            self.load_seconds = time.perf_counter() - started
            self.builds += 1
            self.last_error = None
            if self.saved is not None:
                with contextlib.suppress(Exception):  # a cache: failing to save it never fails the build
                    save_segment(self.store, self.saved, segment, seq)
        except Exception as exc:  # the store answers meanwhile; the next search tries again
            self.last_error = f"{type(exc).__name__}: {exc}"

    def wait(self, timeout: float | None = None) -> bool:
        """Build now if needed and wait until the index is current (tests, benchmarks, a server warming up);
        False when it is not within `timeout` (or is off). A build that lands behind later writes is
        followed by another, so this waits for that one too."""
        if not self.enabled:
            return False
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self._state is None and not self._load_tried:
                self._load()
            if self._state is None:
                self.start_build()
            builder = self._builder
            if builder is not None:
                builder.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if self.current() is not None:
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
            if self.last_error is not None:
                return False  # the build failed; the store answers (status shows the error)

    def status(self) -> dict[str, object]:
        """For `citedocs status`: whether keyword search runs from memory, and what that costs."""
        builder = self._builder
        building = builder is not None and builder.is_alive()
        state = (
            "memory" if self._state is not None and not self._stale else "building" if building else "store"
        )
        if not self.enabled:
            state = "off"  # CITEDOCS_KEYWORD_MEMORY=false
        return {
            "state": state,
            "chunks": self.chunks,
            "bytes": self.nbytes,
            "builds": self.builds,
            "load_seconds": None if self.load_seconds is None else round(self.load_seconds, 3),
            "error": self.last_error,
        }

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays (not the vocabulary dictionaries)."""
        state = self._state
        return 0 if state is None else sum(s.nbytes for s in state.segments)

    @property
    def chunks(self) -> int:
        state = self._state
        return 0 if state is None else state.stats.rows


def _filter(
    source_ids: Sequence[int] | None, formats: Sequence[str] | None
) -> Callable[[Segment], np.ndarray] | None:
    """The row mask of a segment for these sources and formats (exact: every row carries both)."""
    if source_ids is None and formats is None:
        return None
    sources = None if source_ids is None else np.asarray(list(source_ids), dtype=np.int32)
    wanted = None if formats is None else set(formats)

    def allowed(segment: Segment) -> np.ndarray:
        mask = np.ones(len(segment), dtype=np.bool_)
        if sources is not None:
            mask &= np.isin(segment.sources, sources)
        if wanted is not None:
            codes = [i for i, name in enumerate(segment.format_names) if name in wanted]
            mask &= np.isin(segment.formats, np.asarray(codes, dtype=np.int16))
        return mask

    return allowed
