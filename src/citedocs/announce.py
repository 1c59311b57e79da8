"""The small file beside an index that says a `citedocs serve` answers on it (`index.sqlite3.server.json`: URL,
pid, index path), for as long as it listens; CLI calls read it (cli/remote.py). Standard library only.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

__all__ = ["announce", "server_file"]


def server_file(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + ".server.json")


@contextlib.contextmanager
def announce(db_path: Path | None, url: str) -> Iterator[None]:
    """While the block runs, tell CLI calls on this index where the server is (nothing for PostgreSQL)."""
    path = None if db_path is None else server_file(db_path)
    if path is not None:
        with contextlib.suppress(OSError):
            tmp = path.with_name(path.name + f".{os.getpid()}")
            tmp.write_text(json.dumps({"url": url, "pid": os.getpid(), "db": str(db_path)}), encoding="utf-8")
            os.replace(tmp, path)
    try:
        yield
    finally:
        if path is not None:
            with contextlib.suppress(OSError):
                if json.loads(path.read_text(encoding="utf-8")).get("pid") == os.getpid():
                    path.unlink()
