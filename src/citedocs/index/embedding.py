"""The embedding pass: after keyword indexing, vectors for every chunk that lacks one, in resumable batches.

Each batch is committed on its own, so a killed pass resumes where it stopped; a chunk whose embedding input
is unchanged is never embedded twice.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from citedocs.embed.auto import CHOICE_KEY, AutoEmbedder
from citedocs.embed.blob import FINGERPRINT_KEY, to_blob
from citedocs.embed.lazy import LazyEmbedder
from citedocs.errors import ModelMismatchError
from citedocs.index.records import embedding_input
from citedocs.store import Store

# Passages an "auto" embedder looks at to choose its model.
CHOICE_SAMPLE = 256


@dataclass(slots=True)
class EmbedProgress:
    total: int
    done: int = 0
    embedded: int = 0
    seconds: float = 0.0


def check_fingerprint(store: Store, embedder: LazyEmbedder) -> None:
    """Refuse to mix vectors of two models in one index; the message names the fix."""
    stored = store.get_meta(FINGERPRINT_KEY)
    current = embedder.fingerprint()
    if stored is None:
        store.set_meta(FINGERPRINT_KEY, current)
    elif stored != current:
        raise ModelMismatchError(
            f"The index was embedded with {stored!r}, but the configured embedder is {current!r}.",
            "Run `citedocs reindex --force` to re-embed with the new model, or set CITEDOCS_EMBEDDER back.",
        )


def embed_pending(
    store: Store,
    embedder: LazyEmbedder,
    *,
    batch: int = 32,
    progress: Callable[[EmbedProgress], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> EmbedProgress:
    started = time.perf_counter()
    auto = embedder.inner if isinstance(embedder.inner, AutoEmbedder) else None
    if auto is not None and not auto.decided:
        sample = store.chunks_without_vectors(CHOICE_SAMPLE)
        if not sample:  # nothing to embed: decide when there is
            have, total = store.vector_counts()
            return EmbedProgress(total=total, done=have)
        store.set_meta(CHOICE_KEY, auto.choose([text for _, _, text in sample]))
    check_fingerprint(store, embedder)
    have, total = store.vector_counts()
    state = EmbedProgress(total=total, done=have)
    job = store.start_job(None, "embed", total)
    try:
        while not (should_stop and should_stop()):
            pending = store.chunks_without_vectors(batch)
            if not pending:
                break
            vectors = embedder.embed_passages([embedding_input(h, t) for _, h, t in pending])
            store.put_vectors(
                [(sha, to_blob(vec)) for (sha, _, _), vec in zip(pending, vectors, strict=True)]
            )
            state.embedded += len(pending)
            state.done, state.total = store.vector_counts()
            store.update_job(job, done=state.done, total=state.total)
            if progress:
                progress(state)
        store.purge_orphan_vectors()
        if state.done:
            store.index_vectors(embedder.dim)
    except Exception as exc:
        store.update_job(job, state="failed", message=str(exc), finished=time.time())
        raise
    state.seconds = time.perf_counter() - started
    store.update_job(
        job,
        state="done",
        done=state.done,
        total=state.total,
        finished=time.time(),
        message=f"{state.embedded} chunks embedded in {state.seconds:.1f} s",
    )
    return state
