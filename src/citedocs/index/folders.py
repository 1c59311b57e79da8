"""Incremental indexing of registered folders: stat first, then SHA-256, then parse, chunk and store.

Parsed files are committed in small batches (`Batch`: at most BATCH_FILES files, BATCH_CHUNKS chunks or
BATCH_SECONDS old; a commit per file was a third of a folder of small files' CPU), each document whole, so a
killed indexer loses at most the batch it was on; the next run skips everything already stored with the same
size, mtime or hash and finishes the job without duplicates. The job's progress is written at each commit.
The folder is pinned once (its identity checked against the one stored at registration) and every file is
read from the descriptor the walk's checks were made on; `should_stop` is asked between files, so removing
a folder cancels its indexing cleanly.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from citedocs.errors import CitedocsError, ParseError
from citedocs.index.ingest import prepare
from citedocs.parsers import IMAGE_EXTENSIONS, SUPPORTED_EXTENSIONS, format_for, is_scanned, parse_bytes
from citedocs.parsers.pdf import NO_TEXT
from citedocs.settings import Settings
from citedocs.sources.confined import FolderHandle
from citedocs.sources.folders import DEFAULT_IGNORED_DIRS, FoundFile, scan_paths, shown_name, walk_folder
from citedocs.store import ChunkRecord, DocumentRecord, Source, Store


@dataclass(slots=True)
class IndexProgress:
    source: str
    total: int = 0
    done: int = 0
    indexed: int = 0
    unchanged: int = 0
    failed: int = 0
    removed: int = 0
    ocr_pending: int = 0  # scanned PDFs set aside for the OCR pass (not counted as failed)
    current: str | None = None
    failures: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0
    cancelled: bool = False


ProgressCallback = Callable[[IndexProgress], None]
BATCH_FILES = 64
BATCH_CHUNKS = 2_000
BATCH_SECONDS = 0.25  # a search during indexing sees a file this soon after it was read
OCR_PENDING = "waiting for OCR (a scanned PDF or an image): it runs after keyword indexing; `citedocs status` shows progress"
CANCELLED = (
    "stopped before the end (the folder is being removed, or the process is stopping); the next run resumes"
)


def pin_source(store: Store, source: Source) -> FolderHandle:
    """The folder's handle, refused if the path now leads elsewhere; a folder registered before identities
    were stored gets its identity recorded on this first use."""
    expected = source.options.get("identity")
    handle = FolderHandle.pin(Path(source.uri), (int(expected[0]), int(expected[1])) if expected else None)
    if not expected:
        source.options = {**source.options, "identity": list(handle.identity)}
        store.update_source(source.id, options=source.options)
    return handle


class Batch:
    """Parsed documents not yet committed; `add` says when they should be (`commit`)."""

    def __init__(self, store: Store, source_id: int) -> None:
        self.store = store
        self.source_id = source_id
        self.items: list[tuple[DocumentRecord, list[ChunkRecord]]] = []
        self.chunks = 0
        self.since = 0.0
        self.added = 0

    def add(self, item: tuple[DocumentRecord, list[ChunkRecord]]) -> bool:
        """Queue one document; True when the batch is full or old enough to commit, and for a run's first
        document, so a search made while a folder is indexed finds its first file at once."""
        if not self.items:
            self.since = time.monotonic()
        self.items.append(item)
        self.chunks += len(item[1])
        self.added += 1
        return self.added == 1 or len(self.items) >= BATCH_FILES or self.chunks >= BATCH_CHUNKS or self.due()

    def due(self) -> bool:
        """Nothing queued, or the oldest queued document waited BATCH_SECONDS."""
        return not self.items or time.monotonic() - self.since >= BATCH_SECONDS

    def commit(self) -> None:
        if self.items:
            self.store.replace_documents(self.source_id, self.items)
            self.items, self.chunks = [], 0


class FolderIndexer:
    def __init__(self, store: Store, settings: Settings, progress: ProgressCallback | None = None) -> None:
        self.store = store
        self.settings = settings
        self.progress = progress
        self._batch: Batch | None = None

    def index(
        self, source: Source, *, force: bool = False, should_stop: Callable[[], bool] | None = None
    ) -> IndexProgress:
        started = time.perf_counter()
        state = IndexProgress(source=source.name)
        job = self.store.start_job(source.id, "index")
        self.store.update_source(source.id, status="indexing", last_error=None)
        try:
            with pin_source(self.store, source) as handle:
                self._walk_and_index(handle, source, job, force, state, should_stop)
            if state.cancelled:
                self.store.update_job(job, state="interrupted", message=CANCELLED, finished=time.time())
                self.store.update_source(source.id, status="interrupted")
                return state
        except Exception as exc:
            self.store.update_job(job, state="failed", message=str(exc), finished=time.time())
            self.store.update_source(source.id, status="error", last_error=str(exc))
            raise
        state.current = None
        state.seconds = time.perf_counter() - started
        summary = f"{state.indexed} indexed, {state.unchanged} unchanged, {state.failed} failed, {state.removed} removed"
        self.store.update_job(
            job,
            state="done",
            done=state.done,
            failed=state.failed,
            current=None,
            message=summary,
            finished=time.time(),
        )
        self.store.update_source(source.id, status="ready", last_indexed=time.time())
        if self.progress:
            self.progress(state)
        return state

    def _walk_and_index(
        self,
        handle: FolderHandle,
        source: Source,
        job: int,
        force: bool,
        state: IndexProgress,
        should_stop: Callable[[], bool] | None,
    ) -> None:
        max_bytes = int(self.settings.max_file_mb * 1_048_576)
        found = list(walk_folder(handle, **self._rules(source)))
        existing = self.store.documents(source.id)
        state.total = len(found)
        self.store.update_job(job, total=state.total)
        batch = self._batch = Batch(self.store, source.id)
        committed = 0  # files done as of the last commit: what the job says is done

        def commit() -> None:
            nonlocal committed
            batch.commit()
            if state.done - committed >= 20 or (state.done == state.total and state.done > committed):
                self.store.update_job(job, done=state.done, failed=state.failed, current=state.current)
                committed = state.done

        for item in found:
            if should_stop is not None and should_stop():
                commit()
                state.cancelled = True
                return
            state.current = item.rel_path
            full = self._index_file(
                handle, source, item, existing.get(str(item.path)), force, max_bytes, state
            )
            state.done += 1
            if full or batch.due():
                commit()
            if self.progress:
                self.progress(state)
        commit()
        present = {str(item.path) for item in found}
        gone = [doc.id for path, doc in existing.items() if path not in present and doc.id is not None]
        state.removed = self.store.delete_documents(gone)

    def _rules(self, source: Source) -> dict[str, Any]:
        """Which files count: the walk and the watcher's rescans of changed paths use the same rules."""
        return {
            "include": source.options.get("include", []),
            "exclude": source.options.get("exclude", []),
            "ignored_dirs": DEFAULT_IGNORED_DIRS | frozenset(self.settings.extra_ignore_dirs),
            "max_bytes": int(self.settings.max_file_mb * 1_048_576),
            "supported": SUPPORTED_EXTENSIONS | IMAGE_EXTENSIONS
            if self.settings.ocr
            else SUPPORTED_EXTENSIONS,
        }

    def index_paths(
        self, source: Source, paths: Sequence[str], *, should_stop: Callable[[], bool] | None = None
    ) -> IndexProgress:
        """Only what is at `paths` (absolute; files, or folders with everything below them): what changed is
        re-read, what is gone or no longer counts is purged, the rest of the folder is not looked at. No job
        is recorded (the watcher calls this on every save); a path outside the folder is ignored."""
        started = time.perf_counter()
        state = IndexProgress(source=source.name)
        root = Path(source.uri)
        rels = sorted({Path(p).relative_to(root).as_posix() for p in paths if Path(p).is_relative_to(root)})
        rels = [r for r in rels if r != "."]
        if not rels:
            return state
        rules = self._rules(source)
        with pin_source(self.store, source) as handle:
            try:
                found = list(scan_paths(handle, rels, **rules))
            except OSError:  # a folder on the way could not be opened: the walk records why
                return self.index(source, should_stop=should_stop)
            files = {item.rel_path for item in found}  # a path found as itself is a file: nothing below it
            shown = [shown_name(r) for r in rels]  # as the store holds them (a name not UTF-8 is escaped)
            existing = self.store.documents_within(
                source.id,
                [str(root / r) for r in shown if r in files],
                [str(root / r) for r in shown if r not in files],
            )
            present = {str(item.path) for item in found}
            # purged first: a renamed file is never found twice, under its old and its new name
            gone = [doc.id for path, doc in existing.items() if path not in present and doc.id is not None]
            state.removed = self.store.delete_documents(gone)
            state.total = len(found)
            batch = self._batch = Batch(self.store, source.id)
            for item in found:
                if should_stop is not None and should_stop():
                    state.cancelled = True
                    break
                state.current = item.rel_path
                if self._index_file(
                    handle, source, item, existing.get(str(item.path)), False, rules["max_bytes"], state
                ):
                    batch.commit()
                state.done += 1
            batch.commit()
        state.current = None
        state.seconds = time.perf_counter() - started
        return state

    def _index_file(
        self,
        handle: FolderHandle,
        source: Source,
        item: FoundFile,
        old: DocumentRecord | None,
        force: bool,
        max_bytes: int,
        state: IndexProgress,
    ) -> bool:
        """Index one file: a parsed document joins the batch; True when the batch should be committed now."""
        fmt = format_for(item.path)
        record = DocumentRecord(
            path=str(item.path),
            rel_path=item.rel_path,
            format=fmt,
            size=item.size,
            mtime_ns=item.mtime_ns,
            sha256=None,
            status="indexed",
        )
        if item.problem:
            if old and old.status == "failed" and old.reason == item.problem and old.size == item.size:
                state.unchanged += 1
                return False
            self._fail(source, record, item.problem, state)
            return False
        if (
            not force
            and old
            and old.size == item.size
            and old.mtime_ns == item.mtime_ns
            and not self._retry(old)
        ):
            state.unchanged += 1
            if old.reason == OCR_PENDING and old.status == "failed":
                state.ocr_pending += 1
            elif old.status == "failed":
                state.failed += 1
                state.failures.append((item.rel_path, old.reason or ""))
            return False
        try:
            data = handle.read(item.rel_path, max_bytes, item.identity)
        except CitedocsError as exc:
            self._fail(source, record, exc.message, state)
            return False
        except OSError as exc:
            self._fail(source, record, f"cannot read: {exc.strerror or exc}", state)
            return False
        record.sha256 = hashlib.sha256(data).hexdigest()
        if (
            not force
            and old
            and old.sha256 == record.sha256
            and old.status != "failed"
            and old.id is not None
            and not self._retry(old)
        ):
            self.store.touch_document(old.id, item.mtime_ns, item.size)
            state.unchanged += 1
            return False
        if fmt == "image":  # only walked with OCR on: straight to the OCR pass
            record.status, record.reason = "failed", OCR_PENDING
            self.store.replace_document(source.id, record, [])
            state.ocr_pending += 1
            return False
        try:
            parsed = parse_bytes(data, item.rel_path, max_bytes)
        except ParseError as exc:
            if is_scanned(exc) and self.settings.ocr:
                record.status, record.reason = "failed", OCR_PENDING
                self.store.replace_document(source.id, record, [])
                state.ocr_pending += 1
            else:  # a scanned PDF's failure says how to turn OCR on and what to install
                self._fail(
                    source, record, f"{exc.message} {exc.hint}" if is_scanned(exc) else exc.message, state
                )
            return False
        except Exception as exc:  # a parser bug must not stop the other files
            self._fail(source, record, f"parser error ({type(exc).__name__}: {exc})", state)
            return False
        record.format = parsed.format
        record.title = parsed.title
        record.pages = parsed.pages
        state.indexed += 1
        assert self._batch is not None and self._batch.source_id == source.id
        return self._batch.add(prepare(record, parsed.segments, self.settings))

    def _retry(self, old: DocumentRecord) -> bool:
        """An unchanged file to parse again: a scanned PDF set aside for OCR once OCR is turned off, or failed
        as scanned once it is turned on (otherwise turning the setting on or off would change nothing)."""
        if old.status != "failed" or not old.reason:
            return False
        if old.reason == OCR_PENDING:
            return not self.settings.ocr
        return self.settings.ocr and NO_TEXT in old.reason

    def _fail(self, source: Source, record: DocumentRecord, reason: str, state: IndexProgress) -> None:
        record.status, record.reason = "failed", reason
        self.store.replace_document(source.id, record, [])
        state.failed += 1
        state.failures.append((record.rel_path, reason))
