"""What `citedocs status` (and /status, MCP `index_status`) reports: jobs, counts, failures, watchers, models.

A token limited to some sources sees only theirs (`seen_by`): their counts, jobs, failures and watchers, and
no other source's name, path or size.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from citedocs.embed.blob import FINGERPRINT_KEY
from citedocs.settings import Settings
from citedocs.store import Job, Source, Store

__all__ = ["index_status", "seen_by"]


def index_status(
    store: Store,
    settings: Settings,
    *,
    embedder: dict[str, Any],
    sources: list[dict[str, Any]],
    watch: list[dict[str, Any]],
    keyword_index: dict[str, Any],
) -> dict[str, Any]:
    """The whole index's status; `embedder` holds the model's name and state, the rest is read here."""
    from citedocs.index.ocr import ocr_status  # OCR's parsers load for a status, not at every start

    have, total = store.vector_counts()
    return {
        "db": store.path,
        "embedder": {
            **embedder,
            "vectors": have,
            "chunks": total,
            "fingerprint": store.get_meta(FINGERPRINT_KEY),
        },
        "totals": store.counts(),
        "sources": sources,
        "jobs": [_job(store, job) for job in store.recent_jobs(10)],
        "failures": [{"path": p, "reason": r} for p, r in store.failed_documents()],
        "watch": watch,
        "ocr": ocr_status(store, settings),
        "keyword_index": keyword_index,
    }


def _job(store: Store, job: Job) -> dict[str, Any]:
    """A job as reported; a running one whose indexer is gone is "interrupted"."""
    state = "interrupted" if job.state == "running" and not store.job_alive(job) else job.state
    return {
        "id": job.id,
        "source_id": job.source_id,
        "kind": job.kind,
        "state": state,
        "total": job.total,
        "done": job.done,
        "failed": job.failed,
        "current": job.current,
        "message": job.message,
        "started": job.started,
        "finished": job.finished,
    }


def seen_by(store: Store, status: dict[str, Any], seen: Sequence[Source]) -> dict[str, Any]:
    """`status` cut to what a caller who sees only the sources `seen` may know."""
    ids = {s.id for s in seen}
    totals: dict[str, int] = {}
    for s in seen:
        for key, value in store.counts(s.id).items():
            totals[key] = totals.get(key, 0) + value
    names = {s.name for s in seen}
    failures = [{"path": p, "reason": r} for s in seen for p, r in store.failed_documents(s.id)]
    return {
        **status,
        "db": None,
        "totals": totals,
        "sources": [s for s in status["sources"] if s["name"] in names],
        "jobs": [j for j in status["jobs"] if j["source_id"] in ids],
        "failures": failures,
        "watch": [w for w in status["watch"] if w.get("source") in names],
        "embedder": {**status["embedder"], "vectors": None, "chunks": totals.get("chunks")},
    }
