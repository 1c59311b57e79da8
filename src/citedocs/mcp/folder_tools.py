"""docsonar's folder tools, without the SDK: the SDK server registers these methods (`tools.py`), and the early
loop calls the read-only ones before the SDK is imported (`early_calls.py`), so both answer with the same code.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field

from citedocs.mcp.budget import fit_items, fit_lines
from citedocs.mcp.calls import ToolRefusal
from citedocs.mcp.shapes import (
    AddFolderOut,
    FoldersOut,
    HitOut,
    IndexingOut,
    ReadOut,
    ReindexOut,
    RemoveOut,
    SearchOut,
    SimilarOut,
    StatusOut,
    folder_out,
    hit_dict,
    iso_time,
)

if TYPE_CHECKING:
    from citedocs.service import Citedocs

__all__ = ["MAX_FAILURES_SHOWN", "FolderTools", "Mode", "TopK", "join_notes"]

MAX_FAILURES_SHOWN = 50

Mode = Literal["keyword", "semantic", "hybrid"]
TopK = Annotated[
    int | None,
    Field(
        ge=1, le=50, description="How many results to return (1-50; default: the server's CITEDOCS_TOP_K)."
    ),
]


class FolderTools:
    """docsonar's tools. Method names are the tool names; docstrings are the tool descriptions."""

    def __init__(self, app: Citedocs, budget: int) -> None:
        self.app = app
        self.budget = budget
        self.threads: list[threading.Thread] = []

    def _background(self, name: str | None, force: bool = False) -> None:
        self.threads = [t for t in self.threads if t.is_alive()]
        self.threads.append(self.app.index_in_background(name, force=force))

    def _folder(self, path: str) -> Any:
        source = self.app.find_source(path)
        if source.kind != "folder":
            raise ToolRefusal(
                f"{path} is a documentation site, not a folder. Use the *_doc_source tools for sites."
            )
        return source

    def add_folder(
        self,
        path: Annotated[str, Field(description="Absolute path of the folder to register (~ is expanded).")],
        include_globs: Annotated[
            list[str] | None, Field(description="Only index files matching these globs, e.g. ['**/*.md'].")
        ] = None,
        exclude_globs: Annotated[
            list[str] | None, Field(description="Skip files matching these globs, e.g. ['drafts/**'].")
        ] = None,
    ) -> AddFolderOut:
        """Register a folder of documents (txt, md, rst, pdf, docx, html, code) and start indexing it in the
        background. Returns at once; poll index_status until indexing.active is false. Files are only read,
        never changed."""
        before = {str(p) for p in self.app.folders()}
        source = self.app.add_folder(path, include_globs or (), exclude_globs or ())
        self._background(source.name)
        info = next(i for i in self.app.list_sources("folder") if i.uri == source.uri)
        already = source.uri in before
        return AddFolderOut(
            folder=folder_out(info),
            already_registered=already,
            indexing=True,
            message=("Already registered; checking for changed files." if already else "Registered.")
            + " Indexing runs in the background: call index_status to follow it; search works meanwhile.",
        )

    def remove_folder(
        self, path: Annotated[str, Field(description="A registered folder path, as list_folders shows it.")]
    ) -> RemoveOut:
        """Unregister a folder and purge its index data. The files on disk are not touched."""
        source = self._folder(path)
        self.app.remove(source.name)
        return RemoveOut(removed=source.uri, message="Unregistered; its passages are gone from the index.")

    def list_folders(self) -> FoldersOut:
        """The registered folders with document and passage counts, status and last index time."""
        return FoldersOut(folders=[folder_out(i) for i in self.app.list_sources("folder")])

    def search(
        self,
        query: Annotated[str, Field(description="Words or a question; exact identifiers work well.")],
        top_k: TopK = None,
        folder: Annotated[
            str | None, Field(description="Only search this registered folder (or site name).")
        ] = None,
        file_type: Annotated[
            str | None, Field(description="Only this format: md, pdf, docx, html, txt, …")
        ] = None,
        mode: Annotated[
            Mode | None, Field(description="keyword, semantic or hybrid (default: hybrid when available).")
        ] = None,
    ) -> SearchOut:
        """Search the indexed folders with keyword + semantic ranking. Each hit gives the file path, heading
        or page, line span, score, snippet, passage text and a stable chunk_id; read_file a hit's lines to see
        its surroundings. A passage that repeats a better-ranked one is left out for the next one."""
        result = self.app.search(query, k=top_k, mode=mode, source=folder, file_type=file_type, distinct=True)
        fitted = fit_items([hit_dict(h) for h in result.hits], self.budget - 600)
        return SearchOut(
            query=query,
            mode=result.mode,
            hits=[HitOut(**h) for h in fitted.items],
            note=join_notes(result.note, fitted.note),
        )

    def read_file(
        self,
        path: Annotated[
            str, Field(description="A file inside a registered folder (absolute, or relative to it).")
        ],
        start_line: Annotated[int | None, Field(ge=1, description="First line to return (1-based).")] = None,
        end_line: Annotated[int | None, Field(ge=1, description="Last line to return (inclusive).")] = None,
    ) -> ReadOut:
        """Read a file's text (extracted text for pdf/docx/html), optionally only some lines. Only files
        inside registered folders can be read. Long output stops early and gives next_start_line."""
        read = self.app.read(path, start_line, end_line)
        window = fit_lines(read.text.split("\n"), read.start_line, read.total_lines, self.budget - 400)
        return ReadOut(
            path=read.path,
            start_line=read.start_line,
            end_line=window.end_line,
            total_lines=read.total_lines,
            format=read.format,
            text=window.text,
            next_start_line=window.next_start_line,
            note=window.note,
        )

    def find_similar(
        self,
        path: Annotated[str, Field(description="An indexed file inside a registered folder.")],
        top_k: TopK = None,
    ) -> SimilarOut:
        """Find the indexed passages from other files that are most similar in meaning to this file."""
        finder = getattr(self.app, "find_similar", None)
        if finder is None:
            raise ToolRefusal("find_similar is not available in this build of citedocs. Use search instead.")
        result = finder(path, top_k)
        hits = result.hits if hasattr(result, "hits") else result
        fitted = fit_items([hit_dict(h) for h in hits], self.budget - 600)
        return SimilarOut(
            path=path,
            hits=[HitOut(**h) for h in fitted.items],
            note=join_notes(getattr(result, "note", None), fitted.note),
        )

    def reindex(
        self,
        folder: Annotated[str | None, Field(description="One registered folder (default: all).")] = None,
        force: Annotated[
            bool, Field(description="Rebuild every file, not only new and changed ones.")
        ] = False,
    ) -> ReindexOut:
        """Bring the index up to date in the background: new and changed files are indexed, deleted ones
        purged. Returns at once; poll index_status."""
        names = [self._folder(folder).uri] if folder else [str(p) for p in self.app.folders()]
        if not names:
            raise ToolRefusal("No folder is registered. Register one with add_folder first.")
        self._background(names[0] if folder else None, force)
        return ReindexOut(
            folders=names, force=force, message="Reindexing in the background; call index_status."
        )

    def index_status(self) -> StatusOut:
        """Index totals, embedding model state, background job progress and files that failed to index."""
        status = self.app.status()
        jobs = [
            {**j, "started": iso_time(j.get("started")), "finished": iso_time(j.get("finished"))}
            for j in status["jobs"][:5]
        ]
        active = any(t.is_alive() for t in self.threads) or any(j["state"] == "running" for j in jobs)
        failures = status["failures"]
        note = None
        if len(failures) > MAX_FAILURES_SHOWN:
            note = f"showing {MAX_FAILURES_SHOWN} of {len(failures)} failed files"
        return StatusOut(
            totals=status["totals"],
            embedder=status.get("embedder"),
            indexing=IndexingOut(active=active, jobs=jobs),
            folders=[folder_out(i) for i in self.app.list_sources("folder")],
            failures=failures[:MAX_FAILURES_SHOWN],
            note=note,
            watch=status.get("watch", []),
        )


def join_notes(*notes: str | None) -> str | None:
    parts = [n for n in notes if n]
    return "; ".join(parts) if parts else None
