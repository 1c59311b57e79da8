"""Numbered SQL migrations, applied in order and recorded in `PRAGMA user_version`."""

from __future__ import annotations

import sqlite3
from importlib import resources

from citedocs.errors import StoreError


def migrations() -> list[tuple[int, str]]:
    folder = resources.files("citedocs.store").joinpath("migrations")
    found = []
    for entry in folder.iterdir():
        name = entry.name
        if name.endswith(".sql") and name[:3].isdigit():
            found.append((int(name[:3]), entry.read_text(encoding="utf-8")))
    return sorted(found)


def schema_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def latest_version() -> int:
    steps = migrations()
    return steps[-1][0] if steps else 0


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the schema up to date; refuse a database newer than this code."""
    current = int(conn.execute("PRAGMA user_version").fetchone()[0])
    steps = migrations()
    latest = steps[-1][0] if steps else 0
    if current > latest:
        raise StoreError(
            f"The index was written by a newer citedocs (schema {current}, this one knows {latest}).",
            "Upgrade citedocs, or point --db at another file.",
        )
    for number, sql in steps:
        if number <= current:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in _statements(sql):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {number}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return latest


def _statements(sql: str) -> list[str]:
    """Split a script on complete statements (triggers contain inner semicolons)."""
    out: list[str] = []
    buf = ""
    for line in sql.splitlines(keepends=True):
        if not buf and line.strip().startswith("--"):
            continue
        buf += line
        if sqlite3.complete_statement(buf):
            out.append(buf.strip())
            buf = ""
    if buf.strip():
        out.append(buf.strip())
    return out
