"""What the site service hands out (SiteInfo, FetchedPage, SiteHit), its page cache, and the pure steps
between a fetched body and stored markdown."""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from dataclasses import asdict, dataclass
from typing import Any

from citedocs.errors import FetchError
from citedocs.parsers.html import html_to_markdown
from citedocs.sites import rank as sites_rank
from citedocs.sources.fetch import FetchResult
from citedocs.sources.llmstxt import InlinePage

__all__ = [
    "DEFAULT_SITES",
    "FAILURE_BACKOFF_S",
    "FetchedPage",
    "PageCache",
    "SiteHit",
    "SiteInfo",
    "first_heading",
    "inline_page_urls",
    "page_markdown",
    "sha256_bytes",
    "sha256_text",
]

FAILURE_BACKOFF_S = 300.0

# The sources llmstxt-doc-search registers on first run; citedocs does so only when
# Settings.default_sites (CITEDOCS_DEFAULT_SITES=true) is set.
DEFAULT_SITES: tuple[tuple[str, str], ...] = (
    ("strands", "https://strandsagents.com/llms.txt"),
    ("kiro", "https://kiro.dev/llms.txt"),
    ("aws-bedrock-userguide", "https://docs.aws.amazon.com/bedrock/latest/userguide/llms.txt"),
    ("aws-agentic-ai-lens", "https://docs.aws.amazon.com/wellarchitected/latest/agentic-ai-lens/llms.txt"),
    (
        "aws-bedrock-agentcore-devguide",
        "https://docs.aws.amazon.com/bedrock-agentcore/latest/devguide/llms.txt",
    ),
    ("mcp", "https://modelcontextprotocol.io/llms.txt"),
)

_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_TEXT_TYPES = frozenset({"application/markdown", "application/x-markdown", "application/octet-stream", ""})
_HTML_START = re.compile(rb"^\s*(?:<!doctype\s+html|<html|<head|<body)", re.I)
_FIRST_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)
_SLUG = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True, slots=True)
class SiteInfo:
    """A registered site as `citedocs sites` and list_doc_sources show it."""

    name: str
    url: str
    docs: int
    pages_fetched: int
    chunks: int
    status: str
    last_error: str | None
    last_refreshed: float | None
    retry_in_s: float | None = None
    changes: dict[str, int] | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if self.changes is None:
            data.pop("changes")
        return data


@dataclass(frozen=True, slots=True)
class FetchedPage:
    """A page as markdown; `from_cache` is True when no body was downloaded (memory cache, a stored inline
    page, or a conditional request answered 304)."""

    url: str
    source: str
    title: str
    markdown: str
    content_type: str
    from_cache: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class SiteHit(sites_rank.SiteHit):
    """A ranked link (source, title, url, description, section, score 0-1, snippet)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class PageCache:
    """Least-recently-used pages by URL; `size` 0 means unbounded. Thread-safe."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._pages: OrderedDict[str, FetchedPage] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, url: str) -> FetchedPage | None:
        with self._lock:
            page = self._pages.get(url)
            if page is not None:
                self._pages.move_to_end(url)
            return page

    def put(self, page: FetchedPage) -> None:
        with self._lock:
            self._pages[page.url] = page
            self._pages.move_to_end(page.url)
            while self.size > 0 and len(self._pages) > self.size:
                self._pages.popitem(last=False)

    def drop(self, urls: set[str] | None = None, source: str | None = None) -> None:
        with self._lock:
            for url, page in list(self._pages.items()):
                if (urls is not None and url in urls) or (source is not None and page.source == source):
                    del self._pages[url]

    def __len__(self) -> int:
        return len(self._pages)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    return sha256_bytes(text.encode("utf-8"))


def page_markdown(result: FetchResult) -> tuple[str, str]:
    """(markdown, media type) of a fetched body: HTML converted to clean markdown, any text as it is."""
    media = result.content_type.split(";", 1)[0].strip().lower()
    if media in _HTML_TYPES or (media in _TEXT_TYPES and _HTML_START.match(result.content[:512])):
        return html_to_markdown(result.text()), media or "text/html"
    if media.startswith("text/") or media in _TEXT_TYPES or media.endswith(("+markdown", "/markdown")):
        text = result.text().replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
        return text, media or "text/plain"
    raise FetchError(
        f"{result.url} is {media}, not a text or HTML page.",
        "Only markdown, plain text and HTML pages can be read; open this one in a browser.",
    )


def first_heading(markdown: str) -> str | None:
    match = _FIRST_HEADING.search(markdown[:20_000])
    return match.group(1).strip() if match else None


def inline_page_urls(pages: list[InlinePage], llms_txt_url: str) -> list[str]:
    """A URL for every inlined page: its own, or `<llms.txt url>#<title slug>` when the file gives none."""
    taken: set[str] = set()
    urls: list[str] = []
    for n, page in enumerate(pages, 1):
        url = page.url
        if url is None or url in taken:
            slug = _SLUG.sub("-", page.title.lower()).strip("-") or f"page-{n}"
            url, k = f"{llms_txt_url.split('#', 1)[0]}#{slug}", 2
            while url in taken:
                url, k = f"{llms_txt_url.split('#', 1)[0]}#{slug}-{k}", k + 1
        taken.add(url)
        urls.append(url)
    return urls
