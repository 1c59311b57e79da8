"""A document's chunks as the store keeps them: stable ids, the embedder's input, and the analysed terms."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

from citedocs.store import ChunkRecord
from citedocs.text.analyzer import index_text
from citedocs.text.cjk import is_japanese

if TYPE_CHECKING:
    from citedocs.chunker import ChunkDraft

__all__ = ["chunk_id_for", "chunk_records", "embedding_input"]


def chunk_id_for(rel_path: str, heading: str, text: str, seen: dict[str, int]) -> str:
    """Short content-hash id: stable while the text, its heading and its file stay the same."""
    key = f"{rel_path}\0{heading}\0{text}".encode("utf-8", "surrogatepass")  # a lone surrogate never raises
    digest = hashlib.sha256(key).hexdigest()[:16]
    n = seen.get(digest, 0)
    seen[digest] = n + 1
    return digest if n == 0 else f"{digest[:13]}-{n}"


def embedding_input(heading: str, text: str) -> str:
    """What the embedder sees: the heading path gives a short passage its context."""
    return f"{heading}\n{text}" if heading else text


def chunk_records(rel_path: str, title: str | None, drafts: list[ChunkDraft]) -> list[ChunkRecord]:
    seen: dict[str, int] = {}
    # One language per document: a heading or paragraph of kanji only in a Japanese document is cut into
    # Japanese words like the rest of it, not into the bigrams of Chinese.
    japanese = is_japanese(title or "") or any(is_japanese(d.text) or is_japanese(d.heading) for d in drafts)
    name_terms = index_text(Path(rel_path).stem.replace("__", " ") + " " + (title or ""), japanese)
    records = []
    for ord_, draft in enumerate(drafts):
        records.append(
            ChunkRecord(
                chunk_id=chunk_id_for(rel_path, draft.heading, draft.text, seen),
                ord=ord_,
                heading=draft.heading,
                page_start=draft.page_start,
                page_end=draft.page_end,
                line_start=draft.line_start,
                line_end=draft.line_end,
                text=draft.text,
                sha256=hashlib.sha256(embedding_input(draft.heading, draft.text).encode()).hexdigest(),
                tokens=draft.tokens,
                heading_terms=f"{name_terms} {index_text(draft.heading, japanese)}",
                body_terms=index_text(draft.text, japanese),
            )
        )
    return records
