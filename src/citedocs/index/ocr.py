"""The OCR pass: scanned PDFs, found by keyword indexing and set aside, are OCRed after it, one at a time.

With OCR on (CITEDOCS_OCR), the folder indexer records a PDF without a text layer as failed with the reason
OCR_PENDING instead of parsing it further; that record is the queue. This pass reads each such file again
through its folder's handle, OCRs it (parsers/ocr.py) and replaces the record with the OCRed text, so a pass
that is stopped (a restart, a removed folder) resumes with the files still marked. The document's `reason`
keeps how its text was made: `OCR (eng): 3 pages, mean word confidence 91.2`.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from citedocs.errors import CitedocsError
from citedocs.index.folders import OCR_PENDING, pin_source
from citedocs.index.ingest import ingest
from citedocs.parsers import OcrOptions, parse_bytes
from citedocs.parsers.ocr import ocr_problem, tesseract_command
from citedocs.settings import Settings
from citedocs.store import DocumentRecord, Source, Store

OCR_DONE_PREFIX = "OCR ("
# render resolution, the time one page may take, and the longest scanned PDF read
OCR_DPI = 300
OCR_PAGE_S = 120.0
OCR_MAX_PAGES = 500
_CONFIDENCE = re.compile(r"mean word confidence ([0-9.]+)")


def ocr_options(settings: Settings) -> OcrOptions:
    return OcrOptions(  # one place maps the settings to the parser's options
        languages=settings.ocr_languages,
        dpi=OCR_DPI,
        page_seconds=OCR_PAGE_S,
        max_pages=OCR_MAX_PAGES,
    )


def is_pending(doc: DocumentRecord) -> bool:
    return doc.status == "failed" and doc.reason == OCR_PENDING


def ocr_note(languages: str, pages: int | None, confidence: float | None) -> str:
    shown = "no words" if confidence is None else f"mean word confidence {confidence:.1f}"
    return f"{OCR_DONE_PREFIX}{languages}): {pages or 0} pages, {shown}"


def pending_documents(store: Store, source: Source) -> list[DocumentRecord]:
    return sorted((d for d in store.documents(source.id).values() if is_pending(d)), key=lambda d: d.rel_path)


@dataclass(slots=True)
class OcrProgress:
    total: int = 0
    done: int = 0
    ocred: int = 0
    failed: int = 0
    pages: int = 0
    seconds: float = 0.0
    current: str | None = None
    failures: list[tuple[str, str]] = field(default_factory=list)


def ocr_source(
    store: Store,
    settings: Settings,
    source: Source,
    state: OcrProgress,
    *,
    job: int | None = None,
    should_stop: Callable[[], bool] | None = None,
    progress: Callable[[OcrProgress], None] | None = None,
) -> bool:
    """OCR every pending PDF of one folder; False when stopped before the end (the rest stay pending)."""
    options = ocr_options(settings)
    max_bytes = int(settings.max_file_mb * 1_048_576)
    docs = pending_documents(store, source)
    if not docs:
        return True
    with pin_source(store, source) as handle:
        for doc in docs:
            if should_stop is not None and should_stop():
                return False
            state.current = doc.rel_path
            if job is not None:
                store.update_job(job, current=doc.rel_path)
            record = DocumentRecord(
                path=doc.path,
                rel_path=doc.rel_path,
                format=doc.format,
                size=doc.size,
                mtime_ns=doc.mtime_ns,
                sha256=doc.sha256,
                status="indexed",
            )
            try:
                data = handle.read(doc.rel_path, max_bytes)
                record.sha256 = hashlib.sha256(data).hexdigest()
                parsed = parse_bytes(data, doc.rel_path, max_bytes, ocr=options)
            except CitedocsError as exc:
                record.status, record.reason = (
                    "failed",
                    exc.message if not exc.hint else f"{exc.message} {exc.hint}",
                )
                store.replace_document(source.id, record, [])
                state.failed += 1
                state.failures.append((doc.rel_path, record.reason))
            except OSError as exc:
                record.status, record.reason = "failed", f"cannot read: {exc.strerror or exc}"
                store.replace_document(source.id, record, [])
                state.failed += 1
            else:
                record.format, record.title, record.pages = parsed.format, parsed.title, parsed.pages
                record.reason = ocr_note(options.languages, parsed.pages, parsed.ocr_confidence)
                ingest(store, source.id, record, parsed.segments, settings)
                state.ocred += 1
                state.pages += parsed.pages or 0
            state.done += 1
            if job is not None:
                store.update_job(job, done=state.done, failed=state.failed)
            if progress is not None:
                progress(state)
    return True


def start_ocr_job(store: Store, total: int) -> int:
    return store.start_job(None, "ocr", total)


def finish_ocr_job(store: Store, job: int, state: OcrProgress, started: float, *, stopped: bool) -> None:
    state.seconds = time.perf_counter() - started
    state.current = None
    if stopped:
        store.update_job(
            job,
            state="interrupted",
            done=state.done,
            failed=state.failed,
            finished=time.time(),
            message="stopped before the end; the files still waiting are OCRed on the next run",
        )
        return
    store.update_job(
        job,
        state="done",
        done=state.done,
        failed=state.failed,
        current=None,
        finished=time.time(),
        message=f"{state.ocred} PDFs OCRed ({state.pages} pages), {state.failed} failed, "
        f"in {state.seconds:.1f} s",
    )


def ocr_status(store: Store, settings: Settings) -> dict[str, object]:
    """What `status` shows of OCR: whether it is on and can run, files waiting, files OCRed (with confidence)."""
    pending = 0
    ocred: list[dict[str, object]] = []
    if settings.ocr or any(r.startswith("waiting for OCR") for _, r in store.failed_documents(limit=10_000)):
        for source in store.list_sources("folder"):
            for doc in store.documents(source.id).values():
                if is_pending(doc):
                    pending += 1
                elif doc.status == "indexed" and (doc.reason or "").startswith(OCR_DONE_PREFIX):
                    found = _CONFIDENCE.search(doc.reason or "")
                    confidence = float(found.group(1)) if found else None
                    ocred.append(
                        {"path": doc.path, "pages": doc.pages, "confidence": confidence, "note": doc.reason}
                    )
    return {
        "enabled": settings.ocr,
        "languages": settings.ocr_languages,
        "tesseract": tesseract_command(),
        "problem": ocr_problem(ocr_options(settings)) if settings.ocr else None,
        "pending": pending,
        "ocred": sorted(ocred, key=lambda d: str(d["path"]))[:50],
    }
