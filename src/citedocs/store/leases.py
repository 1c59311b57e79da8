"""Leases: which one process watches a folder, across every process that opens the same SQLite index.

A lease is an exclusive `flock` on a small file beside the index (`index.sqlite3.watch-3.lock`), so it is
let go the moment its process exits, however it exits. `flock` belongs to an open file, not to a process,
so two stores in one process exclude each other too. An in-memory index has nobody to share with: its
leases are kept in this process.
"""

from __future__ import annotations

import fcntl
import os
import threading
from typing import Protocol

_local_lock = threading.Lock()
_local_held: set[str] = set()


class Lease(Protocol):
    def release(self) -> None: ...


class FileLease:
    def __init__(self, fd: int) -> None:
        self._fd = fd

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)  # closing the file lets go of the lock
            self._fd = -1


class LocalLease:
    def __init__(self, key: str) -> None:
        self._key: str | None = key

    def release(self) -> None:
        with _local_lock:
            if self._key is not None:
                _local_held.discard(self._key)
                self._key = None


def lease_file(db_path: str, name: str) -> str | None:
    """The lock file; None for an in-memory index (`:memory:`, or `:memory:` plus the store's id)."""
    return None if db_path.startswith(":memory:") else f"{db_path}.{name}.lock"


def try_file_lease(db_path: str, name: str) -> Lease | None:
    """The lease called `name` on this index, or None while another holder has it."""
    path = lease_file(db_path, name)
    if path is None:
        with _local_lock:
            key = f"{db_path}:{name}"
            if key in _local_held:
                return None
            _local_held.add(key)
        return LocalLease(key)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return FileLease(fd)


def file_lease_held(db_path: str, name: str) -> bool:
    """Whether some holder (this process included) has the lease right now."""
    path = lease_file(db_path, name)
    if path is None:
        with _local_lock:
            return f"{db_path}:{name}" in _local_held
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # a shared lock taken to look is let go at once
    return False
