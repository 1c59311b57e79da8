"""Fetch one pinned file from a Python package index, resumably, and check it against its SHA-256.

The simple API (PEP 691 JSON, or PEP 503 HTML from mirrors that only speak that) gives the file's URL; the bytes
go to `NAME.partial` and, when a transfer stops, the next attempt asks for the rest with an HTTP Range request.
Only a file whose size and SHA-256 match the pin is renamed to its final name.
"""

from __future__ import annotations

import hashlib
import html
import os
import re
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urljoin

import httpx

from citedocs.errors import FetchError
from citedocs.llm.catalog import IndexFile

__all__ = ["HASH_MISMATCH", "Downloader", "sha256_of"]

CHUNK = 1 << 20
ATTEMPTS = 3  # per file and run; each retry resumes where the last one stopped
HASH_MISMATCH = "does not match the SHA-256 pinned in citedocs"
_JSON = "application/vnd.pypi.simple.v1+json"
_ANCHOR = re.compile(r"<a\s[^>]*href=[\"']([^\"']+)[\"'][^>]*>", re.IGNORECASE)

Advance = Callable[[int], None]  # bytes just received (negative: a restart threw them away)


def sha256_of(path: Path, advance: Advance | None = None) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        while block := file.read(CHUNK):
            digest.update(block)
            if advance is not None:
                advance(len(block))
    return digest.hexdigest()


class Downloader:
    """One HTTP client for a run of downloads from `index_url`."""

    def __init__(
        self, index_url: str, *, timeout_s: float = 60.0, transport: httpx.BaseTransport | None = None
    ):
        self.index_url = index_url.rstrip("/") + "/"
        self.client = httpx.Client(
            timeout=httpx.Timeout(timeout_s, connect=20.0),
            follow_redirects=True,
            transport=transport,
            headers={"User-Agent": "citedocs-model-install"},
        )

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> Downloader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def url_of(self, item: IndexFile) -> str:
        """The download URL of `item.filename` on the index's page for `item.package`."""
        page = urljoin(self.index_url, re.sub(r"[-_.]+", "-", item.package).lower() + "/")
        try:
            response = self.client.get(page, headers={"Accept": f"{_JSON}, text/html;q=0.1"})
        except httpx.HTTPError as exc:
            raise FetchError(
                f"The package index {self.index_url} cannot be reached: {exc}.",
                "Check the network (or CITEDOCS_LLM_INDEX_URL), then run the same command again.",
            ) from exc
        if response.status_code != 200:
            raise FetchError(
                f"The package index answered HTTP {response.status_code} for {page}.",
                f"Check that CITEDOCS_LLM_INDEX_URL ({self.index_url}) is a simple index "
                f"that serves {item.package}.",
            )
        if response.headers.get("content-type", "").startswith(_JSON):
            urls = [str(f.get("url", "")) for f in response.json().get("files", [])]
        else:
            urls = [html.unescape(href) for href in _ANCHOR.findall(response.text)]
        for url in urls:
            if url.split("#", 1)[0].rsplit("/", 1)[-1] == item.filename:
                return urljoin(str(response.url), url.split("#", 1)[0])
        raise FetchError(
            f"The package index lists no file {item.filename} for {item.package}.",
            "That release may have been removed; see docs/models.md for using another GGUF.",
        )

    def fetch(self, item: IndexFile, dest: Path, advance: Advance | None = None) -> Path:
        """`dest` holds `item`, checked; an existing good `dest` is kept and nothing is downloaded."""
        advance = advance or (lambda _n: None)
        if dest.is_file() and dest.stat().st_size == item.size and sha256_of(dest) == item.sha256:
            advance(item.size)
            return dest
        partial = dest.with_name(dest.name + ".partial")
        have = partial.stat().st_size if partial.exists() else 0
        if have > item.size:
            partial.unlink()
            have = 0
        advance(have)
        url = self.url_of(item)
        error: Exception | None = None
        for _ in range(ATTEMPTS):
            if have == item.size:
                break
            try:
                have = self._transfer(url, partial, have, advance)
                error = None
            except httpx.HTTPError as exc:
                error = exc
                have = partial.stat().st_size if partial.exists() else 0
        if error is not None or have != item.size:
            raise FetchError(
                f"The download of {item.filename} stopped at {have:,} of {item.size:,} bytes"
                + (f" ({type(error).__name__}: {error})." if error else "."),
                "Run the same command again: it resumes from there.",
            )
        actual = sha256_of(partial)
        if actual != item.sha256:
            partial.unlink()  # our own download, never a file of the user's
            raise FetchError(
                f"{item.filename} from {self.index_url} {HASH_MISMATCH}: got {actual}, expected {item.sha256}. "
                "It was deleted and nothing was installed.",
                "Run the command again to download it afresh; if it fails the same way, the index or a proxy "
                "serves a changed file: set CITEDOCS_LLM_INDEX_URL to https://pypi.org/simple or use a GGUF "
                "you trust (docs/models.md).",
            )
        os.replace(partial, dest)
        return dest

    def _transfer(self, url: str, partial: Path, have: int, advance: Advance) -> int:
        headers = {"Range": f"bytes={have}-", "Accept-Encoding": "identity"} if have else {}
        with self.client.stream("GET", url, headers=headers) as response:
            if response.status_code == 200 and have:  # the server ignored the Range: start again
                advance(-have)
                have = 0
            elif response.status_code == 206 and not response.headers.get("content-range", "").startswith(
                f"bytes {have}-"
            ):
                raise httpx.RemoteProtocolError(
                    f"unexpected Content-Range {response.headers.get('content-range')!r}"
                )
            elif response.status_code not in (200, 206):
                raise FetchError(
                    f"{url} answered HTTP {response.status_code}.",
                    "Run the same command again later; it resumes what it has.",
                )
            with open(partial, "ab" if have else "wb") as file:
                for block in response.iter_raw():  # as it arrives: a cut loses nothing received
                    file.write(block)
                    have += len(block)
                    advance(len(block))
        return have
