"""Each parse runs under a byte budget and a time budget, so one hostile file is refused, not swallowed.

`limited()` sets the budget for the parse running in this thread (a context variable, so the helpers every
parser's loops already call can check it without threading an argument through each signature);
`checkpoint()` raises ParseError once the deadline has passed or the text produced passes the byte budget.
Outside `limited()` it does nothing, so parsers called directly (site pages, tests) are unchanged.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from citedocs.errors import ParseError

PARSE_SECONDS = 60.0
EXPANSION = 2
"""Unzipped (docx) or extracted text bytes allowed per byte of the file size cap."""

_MB = 1_048_576


@dataclass(slots=True)
class Budget:
    name: str
    limit: int | None  # bytes of unzipped content or extracted text
    seconds: float
    deadline: float
    used: int = 0

    def check(self, more: int = 0) -> None:
        if time.monotonic() > self.deadline:
            raise ParseError(
                f"{self.name}: took longer than the {self.seconds:g} s parse budget; not indexed",
                "Split or simplify the file (a file this slow to parse is often crafted to stall parsers).",
            )
        self.used += more
        if self.limit is not None and self.used > self.limit:
            raise over_budget(self.name, "its text comes to more than", self.used, self.limit)


def over_budget(name: str, what: str, size: int, limit: int) -> ParseError:
    return ParseError(
        f"{name}: {what} {size / _MB:.1f} MB, over the {limit / _MB:g} MB budget "
        f"({EXPANSION}x the file size cap); not read",
        "A file that expands this much is usually a decompression bomb; if it is genuine, raise CITEDOCS_MAX_FILE_MB.",
    )


_current: ContextVar[Budget | None] = ContextVar("citedocs_parse_budget", default=None)


@contextmanager
def limited(name: str, max_bytes: int | None, seconds: float = PARSE_SECONDS) -> Iterator[Budget]:
    limit = None if max_bytes is None else EXPANSION * max_bytes
    budget = Budget(name, limit, seconds, time.monotonic() + seconds)
    token = _current.set(budget)
    try:
        yield budget
    finally:
        _current.reset(token)


def checkpoint(more: int = 0) -> None:
    """Raise ParseError when the running parse is past its deadline or its byte budget."""
    budget = _current.get()
    if budget is not None:
        budget.check(more)


def current_limit() -> int | None:
    """The byte budget of the running parse (None outside `limited()` or without a cap)."""
    budget = _current.get()
    return None if budget is None else budget.limit
