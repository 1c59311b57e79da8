"""Background jobs (indexing, embedding, OCR) as rows any process can read: what runs, how far it got, and
whether the process behind a `running` row is still alive."""

from __future__ import annotations

import os
import time
from typing import Any

from citedocs.store.connection import Connected
from citedocs.store.records import Job

__all__ = ["JobLog", "pid_alive"]


class JobLog(Connected):
    """The jobs table, kept by every store."""

    def start_job(self, source_id: int | None, kind: str, total: int = 0) -> int:
        same_source = "source_id IS NULL" if source_id is None else "source_id = ?"
        with self.transaction() as conn:
            conn.execute(
                f"UPDATE jobs SET state = 'interrupted', finished = ? WHERE state = 'running' "
                f"AND {same_source} AND kind = ?",
                (time.time(), *([] if source_id is None else [source_id]), kind),
            )
            row = conn.execute(
                "INSERT INTO jobs (source_id, kind, state, pid, total, started) "
                "VALUES (?, ?, 'running', ?, ?, ?) RETURNING id",
                (source_id, kind, os.getpid(), total, time.time()),
            ).fetchone()
        return int(row[0])

    def update_job(self, job_id: int, **fields: Any) -> None:
        allowed = {"total", "done", "failed", "current", "message", "state", "finished"}
        if not fields or not set(fields) <= allowed:
            raise ValueError(f"bad job fields: {sorted(fields)}")
        assignments = ", ".join(f"{key} = ?" for key in fields)
        with self.transaction() as conn:
            conn.execute(f"UPDATE jobs SET {assignments} WHERE id = ?", (*fields.values(), job_id))

    def job_alive(self, job: Job) -> bool:
        """Whether a job marked running still has a process behind it (this machine's pid table)."""
        return job.pid is None or pid_alive(job.pid)

    def recent_jobs(self, limit: int = 10) -> list[Job]:
        rows = self._conn().execute("SELECT * FROM jobs ORDER BY id DESC LIMIT ?", (limit,)).fetchall()
        return [Job(**dict(r)) for r in rows]


def pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
