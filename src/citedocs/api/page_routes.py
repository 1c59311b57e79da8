"""The web page's reading and status routes: a passage in its context, the server's state, the help pages.

`GET /read` reads through `Citedocs.read` (the same confined read as `citedocs read`: registered folders only,
through the folder's pinned descriptor) or, for a page URL, `sites.fetch` (the same guarded fetch as
`citedocs fetch`: registered sites only). `GET /status` gathers what the page's status panel shows.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import anyio
import httpx
from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import PlainTextResponse, Response

from citedocs import __version__
from citedocs.answer.conversation import MAX_HISTORY_CHARS, MAX_TURNS
from citedocs.api.errors import ApiError
from citedocs.api.sources import BackgroundJobs, writes_problem
from citedocs.errors import InputError
from citedocs.llm.client import LLMClient
from citedocs.llm.model import ModelHandle
from citedocs.service import Citedocs

__all__ = ["READ_HINT", "LlmProbe", "router"]

MAX_READ_LINES = 2000
MAX_MARK_CHARS = 8000  # the passage to mark on a PDF page (a chunk is well under this)
PROBE_TTL_S = 15.0
PROBE_TIMEOUT_S = 2.0
READ_HINT = "Ask like GET /read?path=/home/me/docs/setup.md&start=10&end=40 (a file in a registered folder)."
# The docs a page may link to, read from the checkout's docs/ folder when there is one (editable installs).
HELP_PAGES = {"models": "models.md", "web": "web.md", "troubleshooting": "troubleshooting.md"}
DOCS_DIR = Path(__file__).resolve().parents[3] / "docs"

router = APIRouter()


class LlmProbe:
    """Whether the configured model server answers, asked at most every PROBE_TTL_S (any HTTP reply counts)."""

    def __init__(self) -> None:
        self._checked = 0.0
        self._result: dict[str, Any] = {}

    async def check(self, handle: ModelHandle) -> dict[str, Any]:
        described = handle.describe()
        state = described["state"]
        info: dict[str, Any] = {
            "configured": state != "none",
            "state": state,
            "model": (handle.name or described.get("model") or described.get("name")),
            "base_url": described.get("base_url"),
            "reachable": None,
        }
        if "server_kind" in described:  # a llama-server citedocs chose: which, and a faster one being built
            info["server_kind"], info["building"] = described["server_kind"], described.get("building")
        problem = handle.unavailable()  # the verdict `status` and MCP's tool list give, once the model is up
        info["can_answer"] = problem is None
        info["problem"], info["next_step"] = (problem[1], problem[2]) if problem else (None, None)
        if "endpoints" in described:
            info["reachable"] = any(e["state"] != "down" for e in described["endpoints"])
        elif state == "ready":
            info["reachable"] = True
        elif state == "external" and isinstance(handle.client, LLMClient):
            info["reachable"], info["error"] = await self._probe(handle.client.base_url)
        elif handle.error:
            info["reachable"], info["error"] = False, handle.error
        return info

    async def _probe(self, base_url: str) -> tuple[bool, str | None]:
        now = time.monotonic()
        if now - self._checked < PROBE_TTL_S and self._result.get("url") == base_url:
            return self._result["reachable"], self._result["error"]
        try:
            async with httpx.AsyncClient(timeout=PROBE_TIMEOUT_S, follow_redirects=False) as client:
                response = await client.get(base_url.rstrip("/") + "/models")
            reachable, error = response.status_code < 500, None
            if not reachable:
                error = f"the model server answered HTTP {response.status_code}"
        except httpx.HTTPError as exc:
            reachable, error = False, f"the model server did not answer ({type(exc).__name__})"
        self._checked, self._result = now, {"url": base_url, "reachable": reachable, "error": error}
        return reachable, error


def _library(request: Request) -> Citedocs:
    library: Citedocs = request.app.state.citedocs.app
    return library


Library = Annotated[Citedocs, Depends(_library)]


@router.get("/read")
async def read(
    library: Library,
    path: Annotated[str, Query(min_length=1, max_length=4096)],
    start: Annotated[int | None, Query(ge=1)] = None,
    end: Annotated[int | None, Query(ge=1)] = None,
) -> dict[str, Any]:
    """Lines `start`..`end` (at most MAX_READ_LINES) of a registered file's text, or of a site page."""
    if any(ord(c) < 32 or ord(c) == 127 for c in path):
        raise InputError("The path contains control characters.", READ_HINT)
    if start is not None and end is not None and end < start:
        raise InputError(f"end ({end}) is before start ({start}).", READ_HINT)
    first = start or 1
    last = min(end or first + MAX_READ_LINES - 1, first + MAX_READ_LINES - 1)
    if path.startswith(("http://", "https://")):
        page = await anyio.to_thread.run_sync(lambda: library.sites.fetch(path))
        lines = page.markdown.split("\n")
        last = min(last, len(lines))
        return {
            "path": page.url,
            "start_line": first,
            "end_line": last,
            "total_lines": len(lines),
            "text": "\n".join(lines[first - 1 : last]),
            "format": "markdown",
            "title": page.title,
        }
    result = await anyio.to_thread.run_sync(lambda: library.read(path, first, last))
    return {
        "path": result.path,
        "start_line": result.start_line,
        "end_line": result.end_line,
        "total_lines": result.total_lines,
        "text": result.text,
        "format": result.format,
    }


@router.get("/read/page", response_class=Response, responses={200: {"content": {"image/png": {}}}})
async def read_page(
    library: Library,
    path: Annotated[str, Query(min_length=1, max_length=4096)],
    page: Annotated[int, Query(ge=1, le=100_000)],
    text: Annotated[str, Query(max_length=MAX_MARK_CHARS)] = "",
) -> Response:
    """Page `page` of a registered PDF as a PNG, the lines of `text` (the cited passage) marked on it."""
    if any(ord(c) < 32 or ord(c) == 127 for c in path):
        raise InputError("The path contains control characters.", READ_HINT)
    rendered = await anyio.to_thread.run_sync(lambda: library.page_image(path, page, text))
    return Response(
        rendered.png,
        media_type="image/png",
        headers={
            "X-Citedocs-Pages": str(rendered.pages),
            "X-Citedocs-Marked": str(rendered.found),
            "Cache-Control": "no-store",
        },
    )


@router.get("/topics")
async def topics(library: Library) -> dict[str, Any]:
    """A few headings of the indexed documents, for the page's example questions."""
    return {"topics": await anyio.to_thread.run_sync(library.topics)}


@router.get("/status")
async def status(request: Request, library: Library) -> dict[str, Any]:
    """What the page's status panel shows: models, index size, answer figures (as /stats), jobs, version."""
    state = request.app.state.citedocs
    probe: LlmProbe = request.app.state.llm_probe
    jobs: BackgroundJobs = request.app.state.page_jobs
    data = await anyio.to_thread.run_sync(library.status)
    db_bytes = None
    if not library.settings.db.startswith(("postgresql://", "postgres://")):
        db = library.settings.db_path
        db_bytes = sum(f.stat().st_size for f in (db, db.with_name(db.name + "-wal")) if f.exists())
    stats = state.answers.stats.snapshot()
    problem = writes_problem(library.settings)
    return {
        "version": __version__,
        "writable": problem is None,
        "read_only_reason": problem,
        "embedder": data["embedder"],
        "llm": await probe.check(state.model),
        "totals": data["totals"],
        "db_bytes": db_bytes,
        "sources": len(data["sources"]),
        "active": jobs.active or any(j["state"] == "running" for j in data["jobs"]),
        "jobs": data["jobs"][:6],
        "watch": data.get("watch", []),
        "links": data["totals"].get("links", 0),
        "stats": {**stats, "in_flight": state.slots.in_flight, "max_concurrent": state.slots.limit},
        "conversation": {"max_turns": MAX_TURNS, "max_history_chars": MAX_HISTORY_CHARS},
    }


@router.get("/help/{name}", include_in_schema=False)
async def help_page(name: str) -> PlainTextResponse:
    """A docs page from the checkout (docs/NAME.md), for the page's links; 404 where docs are not installed."""
    file = HELP_PAGES.get(name)
    if file is None or not (DOCS_DIR / file).is_file():
        raise ApiError(
            404,
            "not_found",
            f"No help page {name!r} here.",
            "Read docs/models.md (and the other docs) in the citedocs source repository.",
        )
    text = (DOCS_DIR / file).read_text(encoding="utf-8")
    return PlainTextResponse(text, media_type="text/markdown; charset=utf-8")
