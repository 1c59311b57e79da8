"""The web page's sources routes: list folders and sites with their failed files, and change the registry.

Writes call the same facade methods as `citedocs add / add-site / remove / reindex / refresh`. They are
allowed unless the server is read-only: `CITEDOCS_READ_ONLY=true` (or `serve --read-only`) forbids them,
`false` allows them on any bind, and unset (the default) allows them only on a loopback-bound server, so a
server opened to a network does not let every visitor register folders of the machine it runs on. Writes take
JSON only, so a cross-site form cannot send one without a CORS preflight this server never grants (and the
Host/Origin guard in front of every route refuses foreign pages anyway).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, field_validator

from citedocs.api.errors import ApiError
from citedocs.errors import InputError
from citedocs.hosts import loopback_only
from citedocs.service import Citedocs
from citedocs.settings import Settings

__all__ = ["SOURCE_HINTS", "BackgroundJobs", "router", "writes_problem"]

MAX_PATH_CHARS = 4096
SOURCE_HINTS = {
    "/sources": 'Send JSON like {"path": "/home/me/docs"} (a folder\'s full path; optional include and '
    "exclude lists of globs).",
    "/sites": 'Send JSON like {"name": "hono", "url": "https://hono.dev/llms.txt", "fetch_pages": 0} '
    "(fetch_pages: prefetch N pages in the background, -1 all; left out: all of a site of 200 pages or fewer).",
    "/sources/remove": 'Send JSON like {"name": "/home/me/docs"} (a folder path or site name, as listed).',
    "/sources/reindex": 'Send JSON like {"name": "/home/me/docs", "force": false}, or {} for every folder.',
}


def writes_problem(settings: Settings) -> str | None:
    """Why this server refuses registry changes, or None when it allows them."""
    if settings.read_only is True:
        return "This server is read-only (CITEDOCS_READ_ONLY=true or `citedocs serve --read-only`)."
    if settings.read_only is None and not loopback_only(settings.host):
        return (
            f"This server is bound to {settings.host}, not a loopback address, so the page cannot change what "
            "is registered."
        )
    return None


class BackgroundJobs:
    """The indexing threads the page started, so `active` is true from the click, before a job row exists."""

    def __init__(self) -> None:
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    def add(self, thread: threading.Thread) -> None:
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()] + [thread]

    @property
    def active(self) -> bool:
        with self._lock:
            return any(t.is_alive() for t in self._threads)


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    @staticmethod
    def _plain(value: str | None) -> str | None:
        if value is not None and any(ord(c) < 32 or ord(c) == 127 for c in value):
            raise ValueError("must not contain control characters (NUL, newline, tab, ...)")
        return value


class AddFolder(_Body):
    path: str = Field(min_length=1, max_length=MAX_PATH_CHARS)
    include: list[Annotated[str, Field(max_length=500)]] = Field(default_factory=list, max_length=50)
    exclude: list[Annotated[str, Field(max_length=500)]] = Field(default_factory=list, max_length=50)

    _clean = field_validator("path")(_Body._plain)


class AddSite(_Body):
    name: str = Field(min_length=1, max_length=64)
    url: str = Field(min_length=1, max_length=2048)
    fetch_pages: int | None = Field(
        default=None,
        ge=-1,
        description="Prefetch N pages in the background, -1 all; none: a small site whole.",
    )

    _clean = field_validator("name", "url")(_Body._plain)


class SourceName(_Body):
    name: str = Field(min_length=1, max_length=MAX_PATH_CHARS)

    _clean = field_validator("name")(_Body._plain)


class Reindex(_Body):
    name: str | None = Field(default=None, min_length=1, max_length=MAX_PATH_CHARS)
    force: bool = False

    _clean = field_validator("name")(_Body._plain)


def _library(request: Request) -> Citedocs:
    library: Citedocs = request.app.state.citedocs.app
    return library


def _jobs(request: Request) -> BackgroundJobs:
    jobs: BackgroundJobs = request.app.state.page_jobs
    return jobs


def _writable(request: Request) -> Citedocs:
    library = _library(request)
    problem = writes_problem(library.settings)
    if problem is not None:
        raise ApiError(
            403,
            "read_only",
            problem,
            "Change sources with the `citedocs` command on the server "
            "machine, or restart it with CITEDOCS_READ_ONLY=false to allow the page to.",
        )
    return library


Library = Annotated[Citedocs, Depends(_library)]
Writable = Annotated[Citedocs, Depends(_writable)]
Jobs = Annotated[BackgroundJobs, Depends(_jobs)]
router = APIRouter()


def _with_failures(library: Citedocs) -> list[dict[str, Any]]:
    status = library.status()
    out = []
    for info in status["sources"]:
        prefix = info["uri"].rstrip("/") + "/"
        failures = [
            f for f in status["failures"] if info["kind"] == "folder" and f["path"].startswith(prefix)
        ]
        out.append({**info, "failures": failures})
    return out


@router.get("/sources")
async def list_sources(library: Library) -> dict[str, Any]:
    sources = await anyio.to_thread.run_sync(lambda: _with_failures(library))
    problem = writes_problem(library.settings)
    return {
        "sources": sources,
        "file_types": library.file_types(),
        "writable": problem is None,
        "read_only_reason": problem,
    }


def _info(library: Citedocs, uri: str) -> dict[str, Any]:
    return next((i.to_dict() for i in library.list_sources() if i.uri == uri), {"uri": uri})


@router.post("/sources", status_code=202)
async def add_folder(body: AddFolder, library: Writable, jobs: Jobs) -> dict[str, Any]:
    if not Path(body.path).expanduser().is_absolute():
        raise InputError(
            f"{body.path} is not a full path.",
            "Give the folder's full path, e.g. /home/me/docs (the server does not know where the "
            "page was opened).",
        )

    def register() -> dict[str, Any]:
        source = library.add_folder(body.path, body.include, body.exclude)
        jobs.add(library.index_in_background(source.name))
        return _info(library, source.uri)

    return {"source": await anyio.to_thread.run_sync(register), "indexing": True}


@router.post("/sites", status_code=201)
async def add_site(body: AddSite, library: Writable, jobs: Jobs) -> dict[str, Any]:
    info = await anyio.to_thread.run_sync(lambda: library.sites.add(body.name, body.url))
    if body.fetch_pages is None:
        thread, note = await anyio.to_thread.run_sync(lambda: library.auto_prefetch(info.name))
        if thread is not None:
            jobs.add(thread)
        return {"source": info.to_dict(), "prefetch": thread is not None, "note": note}
    if body.fetch_pages:
        limit = None if body.fetch_pages < 0 else body.fetch_pages
        jobs.add(library.prefetch_in_background(info.name, limit))
    return {"source": info.to_dict(), "prefetch": bool(body.fetch_pages)}


@router.post("/sources/remove")
async def remove(body: SourceName, library: Writable) -> dict[str, Any]:
    source = await anyio.to_thread.run_sync(lambda: library.remove(body.name))
    return {"removed": source.name, "kind": source.kind}


@router.post("/sources/reindex", response_model=None)
async def reindex(body: Reindex, library: Writable, jobs: Jobs) -> dict[str, Any] | JSONResponse:
    """A folder (or all) is reindexed in the background (202); a site is refreshed now (200)."""
    if body.name is not None:
        source = await anyio.to_thread.run_sync(lambda: library.find_source(body.name or ""))
        if source.kind == "site":
            info = await anyio.to_thread.run_sync(lambda: library.sites.refresh(source.name))
            return {"source": info.to_dict(), "indexing": False}
    elif not library.folders():
        raise InputError("No folder is registered.", "Add a folder first.")
    jobs.add(library.index_in_background(body.name, force=body.force))
    return JSONResponse({"indexing": True, "name": body.name, "force": body.force}, status_code=202)


@router.get("/jobs")
async def jobs_progress(library: Library, jobs: Jobs) -> dict[str, Any]:
    """Indexing and embedding progress, cheap enough to poll every half second."""
    status = await anyio.to_thread.run_sync(library.status)
    recent = status["jobs"][:6]
    active = jobs.active or any(j["state"] == "running" for j in recent)
    return {"active": active, "jobs": recent, "embedder": status["embedder"], "totals": status["totals"]}
