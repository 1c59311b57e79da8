"""What the MCP tools return: typed results (published as output schemas) and tool errors a model can act on."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from pydantic import BaseModel, Field

from citedocs.errors import CitedocsError

# CLI advice inside library messages, rewritten as the tool a model should call instead.
_CLI_TO_TOOL = (
    (re.compile(r"`citedocs add-site[^`]*`"), "add_doc_source"),
    (re.compile(r"`citedocs sites[^`]*`"), "list_doc_sources"),
    (re.compile(r"`citedocs add[^`]*`"), "add_folder"),
    (re.compile(r"`citedocs list[^`]*`"), "list_folders (folders) or list_doc_sources (sites)"),
    (re.compile(r"`citedocs reindex --force[^`]*`"), "reindex with force=true"),
    (re.compile(r"`citedocs reindex[^`]*`"), "reindex"),
    (re.compile(r"`citedocs status[^`]*`"), "index_status"),
    (re.compile(r"`citedocs refresh[^`]*`"), "refresh_doc_source"),
    (re.compile(r"`--folder`"), "the folder argument"),
)


def tool_message(exc: CitedocsError) -> str:
    """The error's message and next step, with CLI commands named as the MCP tools that do the same."""
    text = str(exc)
    for pattern, tool in _CLI_TO_TOOL:
        text = pattern.sub(tool, text)
    return text


def iso_time(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    return dt.datetime.fromtimestamp(epoch, dt.UTC).isoformat(timespec="seconds")


class HitOut(BaseModel):
    chunk_id: str = Field(description="Stable id of the passage (a content hash).")
    path: str = Field(description="Absolute file path (folders) or page URL (sites); pass it to read_file.")
    source: str = Field(description="The registered folder or site the passage belongs to.")
    heading: str = Field(description="Heading path of the passage, joined with ' > '.")
    page: int | None = Field(description="PDF page number, else null.")
    line_start: int = Field(description="First line of the passage in read_file's numbering.")
    line_end: int = Field(description="Last line of the passage.")
    score: float = Field(description="Rank score; higher is better (comparable within one result list).")
    location: str = Field(description="Short citation: 'file.md:10-24' or 'report.pdf, p. 12'.")
    snippet: str = Field(description="The best-matching window of the passage, matches marked **like this**.")
    text: str | None = Field(default=None, description="The passage text (may be shortened; see note).")
    kind: str = Field(
        default="passage",
        description="'passage', or 'link': a documentation page not fetched yet (heading = its title, snippet "
        "= its llms.txt description); read it with fetch_doc(path).",
    )


class SearchOut(BaseModel):
    query: str
    mode: str = Field(description="The ranking actually used: keyword, semantic or hybrid.")
    hits: list[HitOut]
    note: str | None = Field(
        default=None, description="Degraded ranking or shortened output, and what to do."
    )


class SimilarOut(BaseModel):
    path: str = Field(description="The file the results are similar to.")
    hits: list[HitOut]
    note: str | None = None


class ReadOut(BaseModel):
    path: str
    start_line: int
    end_line: int
    total_lines: int
    format: str | None = Field(default=None, description="Parsed format (markdown, pdf, docx, html, …).")
    text: str = Field(description="The lines start_line..end_line (extracted text for pdf/docx/html).")
    next_start_line: int | None = Field(
        default=None, description="Set when the text was cut to fit: pass it as start_line to read on."
    )
    note: str | None = None


class FolderOut(BaseModel):
    path: str
    status: str = Field(description="new, indexing, ready or error.")
    docs: int = Field(description="Documents indexed.")
    chunks: int = Field(description="Passages indexed.")
    failed: int = Field(description="Files that could not be indexed (see index_status).")
    last_indexed: str | None = Field(default=None, description="UTC time of the last finished index run.")
    last_error: str | None = None
    include_globs: list[str] = Field(default_factory=list)
    exclude_globs: list[str] = Field(default_factory=list)


class AddFolderOut(BaseModel):
    folder: FolderOut
    already_registered: bool
    indexing: bool = Field(description="True while background indexing runs; poll index_status.")
    message: str


class RemoveOut(BaseModel):
    removed: str = Field(description="The folder path or site name that was unregistered.")
    message: str


class FoldersOut(BaseModel):
    folders: list[FolderOut]


class ReindexOut(BaseModel):
    folders: list[str] = Field(description="Folders being reindexed in the background.")
    force: bool
    message: str


class IndexingOut(BaseModel):
    active: bool = Field(description="True while a background index or embedding run is going on.")
    jobs: list[dict[str, Any]] = Field(description="Recent index jobs, newest first.")


class StatusOut(BaseModel):
    totals: dict[str, int] = Field(description="Documents indexed, passages (chunks) and failed files.")
    embedder: dict[str, Any] | None = Field(
        default=None, description="Embedding model state; while it is not ready, search uses keywords only."
    )
    indexing: IndexingOut
    folders: list[FolderOut]
    failures: list[dict[str, str]] = Field(description="Files that failed to index, with the reason.")
    note: str | None = None
    watch: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Each folder's watcher (state watching, polling, standby, error or off, with the reason) "
        "and the last change it applied (time, paths, indexed, removed): edits show up in search by themselves.",
    )


def folder_out(info: Any) -> FolderOut:
    """From a service SourceInfo."""
    options = info.options or {}
    return FolderOut(
        path=info.uri,
        status=info.status,
        docs=info.docs,
        chunks=info.chunks,
        failed=info.failed,
        last_indexed=iso_time(info.last_indexed),
        last_error=info.last_error,
        include_globs=list(options.get("include") or []),
        exclude_globs=list(options.get("exclude") or []),
    )


def hit_dict(hit: Any, *, with_text: bool = True) -> dict[str, Any]:
    """From a citedocs.hits.Hit, with its citation string."""
    data: dict[str, Any] = hit.to_dict(with_text=with_text)
    data["location"] = hit.location
    return data
