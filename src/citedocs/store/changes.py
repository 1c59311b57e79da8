"""The index's change counters: a generation for caches of any kind, and a chunk change log for in-memory
keyword indexes that catch up by the changes instead of rebuilding (search/keyword_index.py).

Both are written in the transaction that changes the data (`_bump` last, so the row lock is brief), so a
reader in another process never sees data without its change, or a change without its data.
"""

from __future__ import annotations

import threading
import time
from abc import abstractmethod
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Generic, TypeVar

from citedocs.store.connection import Connected, Connection, placeholders
from citedocs.store.records import KeywordRow

__all__ = ["CHANGE_LOG_KEEP", "ChangeLog", "GenerationCached", "KeywordChanges"]

CHANGE_LOG_KEEP = 200_000  # chunk_changes rows kept: a reader further behind rebuilds its index instead
_PRUNED_KEY = "chunk_changes_pruned"


@dataclass(slots=True)
class KeywordChanges:
    """Chunks added and removed after a change-log position, read in one snapshot."""

    seq: int
    removed: list[int]
    added: list[KeywordRow]


class ChangeLog(Connected):
    """The generation and the chunk change log, kept by every store."""

    # -- generation (cache invalidation across processes) ------------------------------------------
    def _generation_now(self) -> int:
        row = self._conn().execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        return int(row[0]) if row else 0

    def _bump(self, conn: Connection) -> None:
        """Count a change to searchable data; run it last in a transaction so the row lock is brief.

        It also trims the chunk change log to its newest CHANGE_LOG_KEEP rows (a range delete on the key)."""
        bound = (
            int(conn.execute("SELECT COALESCE(MAX(seq), 0) FROM chunk_changes").fetchone()[0])
            - CHANGE_LOG_KEEP
        )
        if (
            bound > 0
            and conn.execute("SELECT 1 FROM chunk_changes WHERE seq <= ? LIMIT 1", (bound,)).fetchone()
        ):
            conn.execute("DELETE FROM chunk_changes WHERE seq <= ?", (bound,))
            conn.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (_PRUNED_KEY, str(bound)),
            )
        conn.execute(
            "INSERT INTO meta (key, value) VALUES ('generation', '1') ON CONFLICT (key) "
            "DO UPDATE SET value = CAST(CAST(meta.value AS BIGINT) + 1 AS TEXT)"
        )

    def changed_since(self, generation: int) -> tuple[bool, int]:
        """Whether any process changed the index since `generation` (for in-memory caches)."""
        now = self._generation_now()
        return now != generation, now

    # -- the chunk change log, for in-memory keyword indexes ----------------------------------------
    @abstractmethod
    def keyword_terms(self, text: str) -> list[str]:
        """The keyword index's own terms for a stored string of analysed terms (what BM25 counts)."""

    @abstractmethod
    def _keyword_rows_sql(self, every: bool = False) -> str:
        """SELECT of KeywordRow columns for chunks `c` (joined with documents `d`), before any WHERE;
        `every`: for all chunks at once (a backend may read them another way then)."""

    @contextmanager
    def _read_snapshot(self) -> Iterator[Connection]:
        """One consistent read of committed data (several statements, one snapshot)."""
        conn = self._conn()
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    def _change_seq(self, conn: Connection) -> int:
        return int(conn.execute("SELECT COALESCE(MAX(seq), 0) FROM chunk_changes").fetchone()[0])

    @contextmanager
    def keyword_snapshot(self) -> Iterator[tuple[int, Iterable[KeywordRow]]]:
        """(change-log position, every chunk's KeywordRow in rowid order), both from one snapshot."""
        with self._read_snapshot() as conn:
            seq = self._change_seq(conn)
            yield seq, self._stream(conn, self._keyword_rows_sql(every=True) + " ORDER BY c.id")

    def _stream(self, conn: Connection, sql: str) -> Iterable[KeywordRow]:
        return (tuple(row) for row in conn.execute(sql))

    def change_at(self, seq: int) -> tuple[int, int] | None:
        """(chunk, added) of the change-log row at `seq`, or None: identifies a saved keyword index's position."""
        row = self._conn().execute("SELECT chunk, added FROM chunk_changes WHERE seq = ?", (seq,)).fetchone()
        return None if row is None else (int(row[0]), int(row[1]))

    def keyword_changes(self, after: int) -> KeywordChanges | None:
        """What changed after change-log position `after`; None when the log no longer reaches back that far."""
        with self._read_snapshot() as conn:
            pruned = conn.execute("SELECT value FROM meta WHERE key = ?", (_PRUNED_KEY,)).fetchone()
            if pruned is not None and int(pruned[0]) > after:
                return None
            rows = conn.execute(
                "SELECT seq, chunk, added FROM chunk_changes WHERE seq > ? ORDER BY seq", (after,)
            ).fetchall()
            if not rows:
                return KeywordChanges(after, [], [])
            last: dict[int, int] = {}
            removed: dict[int, None] = {}
            for _, chunk, added in rows:
                last[int(chunk)] = int(added)
                if not added:
                    removed.setdefault(int(chunk), None)
            wanted = sorted(chunk for chunk, added in last.items() if added)
            found: list[KeywordRow] = []
            for start in range(0, len(wanted), 500):
                part = wanted[start : start + 500]
                sql = self._keyword_rows_sql() + f" WHERE c.id IN ({placeholders(part)}) ORDER BY c.id"
                found.extend(tuple(r) for r in conn.execute(sql, part).fetchall())
            return KeywordChanges(int(rows[-1][0]), list(removed), found)


T = TypeVar("T")


class GenerationCached(Generic[T]):
    """A value derived from the index, recomputed when any process changes it (the store's generation).
    While a large index is being written (`large(value)`), at most every `max_age_s`: recounting 500k chunks
    costs more than the query that needs the count."""

    def __init__(
        self, store: ChangeLog, compute: Callable[[], T], large: Callable[[T], bool], max_age_s: float = 5.0
    ) -> None:
        self._store = store
        self._compute = compute
        self._large = large
        self._max_age_s = max_age_s
        self._lock = threading.Lock()
        self._seen: tuple[int, float, T] | None = None  # (generation, monotonic time, value)

    def get(self) -> T:
        with self._lock:
            now = time.monotonic()
            seen = self._seen
            changed, generation = self._store.changed_since(seen[0] if seen else -1)
            if seen is None or (changed and (not self._large(seen[2]) or now - seen[1] > self._max_age_s)):
                seen = (generation, now, self._compute())
                self._seen = seen
            return seen[2]
