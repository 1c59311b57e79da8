"""What a one-off `citedocs search` (no server answered) searches and says: one rule for the full command and
the fast path (cli/fast.py), which answers before typer and Settings are imported.

Loading the embedding model for one query costs seconds, so a one-off search with no `--mode` ranks by
keyword when an embedder is configured, and says so once it has hits. Standard library only.
"""

from __future__ import annotations

__all__ = ["ONE_OFF_NOTE", "one_off_mode", "with_one_off_note"]

ONE_OFF_NOTE = (
    "Keyword results: a one-off command does not load the embedding model. Run `citedocs serve` (searches then "
    "use it, hybrid and warm), or pass `--mode hybrid`."
)


def one_off_mode(mode: str | None, has_embedder: bool) -> tuple[str | None, bool]:
    """The mode to search with, and whether the result gets the one-off note."""
    one_off = mode is None and has_embedder
    return ("keyword" if one_off else mode), one_off


def with_one_off_note(note: str | None) -> str:
    return ((note + " ") if note else "") + ONE_OFF_NOTE
