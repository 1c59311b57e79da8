"""One step for every kind of document: chunk its segments and replace its stored version in one transaction.

Folders, site pages and the BEIR loader all go through `ingest`, so a chunking setting or a record field means
the same thing whatever the document came from.
"""

from __future__ import annotations

from collections.abc import Sequence

from citedocs.chunker import ChunkDraft, chunk_segments
from citedocs.index.records import chunk_records
from citedocs.parsers.base import Segment
from citedocs.settings import Settings
from citedocs.store import ChunkRecord, DocumentRecord, Store

__all__ = ["CHUNK_MAX_TOKENS", "CHUNK_MIN_TOKENS", "chunk_document", "ingest", "prepare"]

# a section shorter than this folds into its child section; a longer paragraph than the other is split
CHUNK_MIN_TOKENS = 60
CHUNK_MAX_TOKENS = 560


def chunk_document(segments: Sequence[Segment], settings: Settings) -> list[ChunkDraft]:
    """The chunker with the chunk sizes of `settings`."""
    return chunk_segments(
        list(segments),
        target=settings.chunk_tokens,
        overlap=settings.chunk_overlap,
        min_tokens=CHUNK_MIN_TOKENS,
        max_tokens=max(CHUNK_MAX_TOKENS, settings.chunk_tokens),
    )


def prepare(
    record: DocumentRecord, segments: Sequence[Segment], settings: Settings, *, title_terms: bool = True
) -> tuple[DocumentRecord, list[ChunkRecord]]:
    """`record` and its chunk records as `ingest` stores them, for a caller that writes many documents in one
    transaction (`Store.replace_documents`: a bulk load commits once per batch instead of once per document)."""
    drafts = chunk_document(segments, settings)
    if not drafts and record.status == "indexed":
        record.status, record.reason = "empty", "no text"
    title = record.title if title_terms else None
    return record, chunk_records(record.rel_path, title, drafts)


def ingest(
    store: Store,
    source_id: int,
    record: DocumentRecord,
    segments: Sequence[Segment],
    settings: Settings,
    *,
    title_terms: bool = True,
) -> int:
    """Chunk `segments` and store them as `record` (an empty document is kept, marked "empty").

    `record.rel_path` names the document in chunk ids and in its name terms; `title_terms=False` leaves the
    title out of them (BEIR puts the title in the heading already). Returns the number of chunks.
    """
    record, chunks = prepare(record, segments, settings, title_terms=title_terms)
    store.replace_document(source_id, record, chunks)
    return len(chunks)
