"""Embedding in a process of its own: `citedocs add` returns once keyword search works, and a detached
`citedocs embed` gives the new passages their vectors while the person (or agent) goes on searching.

One embedder per index at a time, across processes: the embedder holds the `embed` lease, an exclusive `flock`
on `index.sqlite3.embed.lock` (store/leases.py), let go however its process ends, and writes its pid into it.
`add` starts no second embedder (and a detached `citedocs embed --detached` that finds one running exits) while one runs: the running one takes the new passages too, because it looks
for passages without vectors again after letting the lease go (so a passage written just before it let go is
never left behind). The pass is resumable (index/embedding.py): a killed embedder loses one batch at most, and
the next `add`, `embed` or `reindex` finishes the work. Its output goes to `index.sqlite3.embed.log`; its
progress is a row in the jobs table, which `citedocs status` shows.

Only a SQLite index file has a lease file to share; PostgreSQL and in-memory indexes embed in the foreground.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from citedocs.store import SQLiteStore, Store
from citedocs.store.leases import FileLease, Lease, file_lease_held, lease_file, try_file_lease

if TYPE_CHECKING:
    from citedocs.index.embedding import EmbedProgress

__all__ = [
    "EMBED_LEASE",
    "Embedder",
    "background_embedder",
    "embed_log",
    "embed_until_done",
    "start_embedder",
]

EMBED_LEASE = "embed"


HANDOFF_ENV = "CITEDOCS_EMBED_LEASE_FD"  # the lease descriptor a detached embedder inherits


@dataclass(slots=True, frozen=True)
class Embedder:
    """The process that embeds an index in the background, as `citedocs status` shows it."""

    pid: int | None
    log: str


def _index_file(store: Store) -> str | None:
    """The SQLite file a lease can be taken beside; None for PostgreSQL and in-memory indexes."""
    if not isinstance(store, SQLiteStore) or store.path == ":memory:":
        return None
    return store.path


def embed_log(db_path: str) -> str:
    """Where the background embedder writes what it has to say."""
    return f"{db_path}.{EMBED_LEASE}.log"


def background_embedder(store: Store) -> Embedder | None:
    """The embedder running on this index now (in any process), or None."""
    path = _index_file(store)
    if path is None or not file_lease_held(path, EMBED_LEASE):
        return None
    lock = lease_file(path, EMBED_LEASE)
    try:
        text = Path(lock).read_text(encoding="utf-8").strip() if lock else ""
    except OSError:
        text = ""
    return Embedder(int(text) if text.isdigit() else None, embed_log(path))


def start_embedder(store: Store, db: str) -> Embedder | None:
    """Start `citedocs embed --db DB` detached (its own session, output to the log), unless an embedder already
    runs on this index (it will embed what was just indexed). None when this index cannot embed in the
    background (PostgreSQL, in-memory): the caller embeds in the foreground then."""
    path = _index_file(store)
    if path is None:
        return None
    running = background_embedder(store)
    if running is not None:
        return running
    lock = lease_file(path, EMBED_LEASE)
    assert lock is not None
    # The lease is taken here and handed to the child through an inherited descriptor, so from the moment
    # `add` returns, `status` and a second `add` see the embedder (the child may take a while to start).
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return background_embedder(store)  # another process started one just now
    log = embed_log(path)
    try:
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "citedocs", "embed", "--detached", "--db", db],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                close_fds=True,
                pass_fds=(fd,),
                env={**os.environ, HANDOFF_ENV: str(fd)},
            )
        Path(lock).write_text(str(proc.pid), encoding="utf-8")
    finally:
        os.close(fd)  # the child holds the lock through its own copy of the descriptor
    return Embedder(proc.pid, log)


def _lease(path: str, *, wait: bool) -> Lease | None:
    """The embed lease with this pid written into it; with `wait`, block until the holder lets go. A detached
    embedder started by `start_embedder` already holds it, through the descriptor named in HANDOFF_ENV."""
    handed = os.environ.pop(HANDOFF_ENV, "")
    if handed.isdigit():
        return FileLease(int(handed))
    if not wait:
        lease = try_file_lease(path, EMBED_LEASE)
    else:
        lock = lease_file(path, EMBED_LEASE)
        assert lock is not None
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # taken once to wait for the holder; taken again below like any other lease
        lease = try_file_lease(path, EMBED_LEASE)
        if lease is None:  # another waiter was quicker: it embeds, and this one waits for it in turn
            return _lease(path, wait=True)
    if lease is not None:
        lock = lease_file(path, EMBED_LEASE)
        assert lock is not None
        Path(lock).write_text(str(os.getpid()), encoding="utf-8")
    return lease


def embed_until_done(
    store: Store, embed: Callable[[], EmbedProgress | None], *, wait: bool
) -> EmbedProgress | None:
    """Run `embed` as the one embedder of this index until no passage lacks a vector.

    Without `wait`, return None at once when another process embeds (it takes these passages too); with `wait`,
    wait for it and then embed what is left, so the call returns when every passage has its vector."""
    path = _index_file(store)
    if path is None:
        return embed()
    result = None
    while True:
        lease = _lease(path, wait=wait)
        if lease is None:
            return result
        try:
            result = embed()
        finally:
            lease.release()
        # Passages written while this pass ran, after its last look, are this embedder's (see above); a pass
        # that stopped early or embedded nothing ends here, so a passage that cannot be embedded never spins.
        if result is None or not result.embedded or not store.chunks_without_vectors(1):
            return result
