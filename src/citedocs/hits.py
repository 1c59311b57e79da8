"""A search hit: what search returns, what answers cite, what every front end prints."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

# The format of a site page's stand-in document while the page is not fetched (citedocs.sites.links).
LINK_FORMAT = "link"


@dataclass(slots=True)
class Hit:
    """One ranked passage with a stable identity.

    `chunk_id` is a short content hash, stable across reindexing of unchanged text. `path` is the file's
    absolute path (folders) or the page URL (sites); `source` is the registered folder path or site name.
    `heading` is the heading path joined with " > ". `page` is set for PDFs. `kind` is "passage", or "link"
    for a site page not fetched yet: its heading is the page title, its text the llms.txt description, and
    its path the URL to fetch.
    """

    chunk_id: str
    path: str
    source: str
    heading: str
    page: int | None
    line_start: int
    line_end: int
    score: float
    text: str
    snippet: str = ""
    kind: str = "passage"

    def to_dict(self, with_text: bool = False) -> dict[str, Any]:
        """The fields in declaration order (`text` only when asked), built directly: `asdict` copies each
        value recursively, a measurable part of a search's serialisation."""
        data = {name: getattr(self, name) for name in _FIELDS}
        if not with_text:
            del data["text"]
        return data

    @property
    def location(self) -> str:
        """Human citation: `report.pdf, p. 12` or `setup.md:10-24`."""
        name = self.path.rsplit("/", 1)[-1] or self.path
        if self.kind == "link":
            return f"{self.path} (not fetched)"
        if self.page is not None:
            return f"{name}, p. {self.page}"
        return f"{name}:{self.line_start}-{self.line_end}"


_FIELDS = tuple(f.name for f in fields(Hit))
