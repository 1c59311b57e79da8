"""Plain records that cross the store's interface; no SQL types leak out."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

SourceKind = Literal["folder", "site"]
# What an in-memory keyword index reads of a chunk: (rowid, source id, format, heading terms, body terms).
KeywordRow = tuple[int, int, str | None, str, str]


@dataclass(slots=True)
class Source:
    id: int
    kind: SourceKind
    name: str
    uri: str
    options: dict[str, Any] = field(default_factory=dict)
    status: str = "new"
    last_error: str | None = None
    last_indexed: float | None = None

    @staticmethod
    def from_row(row: Any) -> Source:
        return Source(
            id=row["id"],
            kind=row["kind"],
            name=row["name"],
            uri=row["uri"],
            options=json.loads(row["options"] or "{}"),
            status=row["status"],
            last_error=row["last_error"],
            last_indexed=row["last_indexed"],
        )


@dataclass(slots=True)
class DocumentRecord:
    path: str
    rel_path: str
    format: str | None
    size: int | None
    mtime_ns: int | None
    sha256: str | None
    status: str  # indexed | failed | empty
    reason: str | None = None
    title: str | None = None
    pages: int | None = None
    id: int | None = None


@dataclass(slots=True)
class ChunkRecord:
    chunk_id: str
    ord: int
    heading: str
    page_start: int | None
    page_end: int | None
    line_start: int
    line_end: int
    text: str
    sha256: str
    tokens: int
    heading_terms: str
    body_terms: str


@dataclass(slots=True)
class StoredChunk:
    """A chunk joined with its document and source: everything a hit needs."""

    rowid: int
    chunk_id: str
    heading: str
    page_start: int | None
    page_end: int | None
    line_start: int
    line_end: int
    text: str
    sha256: str
    document_id: int
    path: str
    rel_path: str
    format: str | None
    source_id: int
    source_name: str
    source_kind: str


@dataclass(slots=True)
class Job:
    id: int
    source_id: int | None
    kind: str
    state: str
    pid: int | None
    total: int
    done: int
    failed: int
    current: str | None
    message: str | None
    started: float
    finished: float | None
