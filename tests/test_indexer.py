from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from citedocs.index.folders import FolderIndexer
from citedocs.service import Citedocs
from citedocs.settings import Settings


def _app(tmp_path: Path, **kw: object) -> Citedocs:
    return Citedocs(Settings(db=str(tmp_path / "index.db"), embedder="none", **kw))  # type: ignore[arg-type]


def _consistency(db: Path) -> dict[str, int]:
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('integrity-check')")
    chunks = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
    fts = conn.execute("SELECT COUNT(*) FROM chunks_fts").fetchone()[0]
    assert chunks == fts
    dup = conn.execute("SELECT COUNT(*) FROM (SELECT path FROM documents GROUP BY path HAVING COUNT(*) > 1)")
    assert dup.fetchone()[0] == 0
    orphans = conn.execute("SELECT COUNT(*) FROM chunks WHERE document_id NOT IN (SELECT id FROM documents)")
    assert orphans.fetchone()[0] == 0
    docs = conn.execute("SELECT COUNT(*) FROM documents").fetchone()[0]
    conn.close()
    return {"docs": docs, "chunks": chunks}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "setup.md").write_text(
        "# Setup\n\n## Windows\n\nRun `lumen.exe --port 8080`.\n", encoding="utf-8"
    )
    (root / "notes.txt").write_text("The quarterly plan mentions snake_case identifiers.\n", encoding="utf-8")
    return root


def test_incremental_reindex_skips_unchanged_replaces_changed_purges_deleted(
    tmp_path: Path, folder: Path
) -> None:
    app = _app(tmp_path)
    app.add_folder(folder)
    [first] = app.index()
    assert (first.indexed, first.unchanged) == (2, 0)
    [again] = app.index()
    assert (again.indexed, again.unchanged) == (0, 2)

    (folder / "notes.txt").write_text("Now it mentions camelCase only.\n", encoding="utf-8")
    os.utime(folder / "setup.md")  # new mtime, same content: hashed, not reparsed
    [changed] = app.index()
    assert (changed.indexed, changed.unchanged) == (1, 1)
    assert app.search("camelCase").hits
    assert not app.search("quarterly").hits

    (folder / "setup.md").rename(folder / "install.md")
    [renamed] = app.index()
    assert renamed.removed == 1 and renamed.indexed == 1
    [hit] = app.search("lumen.exe port").hits
    assert hit.path.endswith("install.md") and hit.heading == "Setup > Windows"

    (folder / "install.md").unlink()
    app.index()
    assert not app.search("lumen").hits
    assert _consistency(tmp_path / "index.db")["docs"] == 1


def test_force_rebuilds_everything(tmp_path: Path, folder: Path) -> None:
    app = _app(tmp_path)
    app.add_folder(folder)
    app.index()
    [forced] = app.index(force=True)
    assert forced.indexed == 2


def test_bad_files_are_recorded_and_indexing_goes_on(tmp_path: Path, folder: Path) -> None:
    (folder / "broken.pdf").write_bytes(b"%PDF-1.7 this is not really a pdf")
    (folder / "empty.md").write_text("", encoding="utf-8")
    (folder / "legacy.txt").write_bytes(
        "Caf\xe9 cr\xe8me costs 5\x80.".encode("latin-1", "ignore") + b"\x80\n"
    )
    (folder / "huge.txt").write_bytes(b"word " * 300_000)
    app = _app(tmp_path, max_file_mb=1)
    app.add_folder(folder)
    [report] = app.index()
    reasons = dict(report.failures)
    assert reasons.get("broken.pdf")
    assert "CITEDOCS_MAX_FILE_MB" in reasons["huge.txt"]
    assert app.search("crème").hits or app.search("creme").hits
    assert app.search("snake_case").hits  # the good files are still there
    status = app.status()
    assert {f["path"].rsplit("/", 1)[-1] for f in status["failures"]} == {"broken.pdf", "huge.txt"}
    [again] = app.index()
    assert again.indexed == 0  # failures are not retried until the file changes


def test_non_utf8_text_is_indexed(tmp_path: Path) -> None:
    root = tmp_path / "d"
    root.mkdir()
    (root / "cp1252.txt").write_bytes("Résumé naïve “quotes” — 10€".encode("cp1252"))
    app = _app(tmp_path)
    app.add_folder(root)
    app.index()
    [hit] = app.search("résumé").hits
    assert "naïve" in hit.text


_KILL_SCRIPT = """
import sys
from citedocs.service import Citedocs
from citedocs.settings import Settings
app = Citedocs(Settings(db=sys.argv[1], embedder="none"))
app.add_folder(sys.argv[2])
app.index()
"""


@pytest.mark.slow
def test_kill_9_during_indexing_leaves_a_consistent_db_that_resumes(tmp_path: Path) -> None:
    root = tmp_path / "many"
    root.mkdir()
    for i in range(400):
        body = "\n\n".join(
            f"## Part {j}\n\nFile {i} part {j} talks about topic{i} and item{j}." for j in range(30)
        )
        (root / f"f{i:03}.md").write_text(f"# Doc {i}\n\n{body}\n", encoding="utf-8")
    db = tmp_path / "index.db"
    proc = subprocess.Popen([sys.executable, "-c", _KILL_SCRIPT, str(db), str(root)])
    deadline = time.monotonic() + 60
    seen = 0
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            conn = sqlite3.connect(db, timeout=5)
            seen = conn.execute("SELECT COUNT(*) FROM documents").fetchone()[0]
            conn.close()
        except sqlite3.OperationalError:
            seen = 0
        if seen >= 40:
            break
    assert proc.poll() is None, "indexing finished before it could be killed; make the corpus bigger"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    partial = _consistency(db)
    assert 40 <= partial["docs"] < 400

    app = Citedocs(Settings(db=str(db), embedder="none"))
    assert app.status()["jobs"][0]["state"] == "interrupted"
    [report] = app.index()
    assert report.indexed + report.unchanged == 400
    assert report.unchanged >= partial["docs"] - 1
    final = _consistency(db)
    assert final["docs"] == 400
    fresh = Citedocs(Settings(db=str(tmp_path / "fresh.db"), embedder="none"))
    fresh.add_folder(root)
    fresh.index()
    assert _consistency(tmp_path / "fresh.db")["chunks"] == final["chunks"]
    [hit] = app.search("topic399 item29", k=1).hits
    assert hit.path.endswith("f399.md")


def test_identifier_query_prefers_the_whole_identifier(tmp_path: Path) -> None:
    root = tmp_path / "d"
    root.mkdir()
    (root / "a.md").write_text("Set max_tokens to limit output.\n", encoding="utf-8")
    (root / "b.md").write_text(
        "The max number of tokens is large. Tokens and max and max tokens.\n", encoding="utf-8"
    )
    app = _app(tmp_path)
    app.add_folder(root)
    app.index()
    hits = app.search("max_tokens").hits
    assert [h.path.rsplit("/", 1)[-1] for h in hits] == ["a.md"]
    prose = app.search("max tokens").hits
    assert {h.path.rsplit("/", 1)[-1] for h in prose} == {"a.md", "b.md"}


def test_a_cancelled_index_keeps_every_file_it_read(tmp_path: Path) -> None:
    """Files are committed in batches: stopping commits the batch, so what was read is kept and searchable."""
    root = tmp_path / "docs"
    root.mkdir()
    for i in range(30):
        (root / f"f{i:02}.md").write_text(f"# F{i}\n\nnote{i} about batches\n", encoding="utf-8")
    app = _app(tmp_path)
    source = app.add_folder(root)
    asked = 0

    def stop() -> bool:
        nonlocal asked
        asked += 1
        return asked > 5

    state = FolderIndexer(app.store, app.settings).index(source, should_stop=stop)
    assert state.cancelled and state.done == state.indexed == 5
    assert app.store.counts(source.id)["indexed"] == 5
    assert app.status()["jobs"][0]["state"] == "interrupted"
    assert [h.path.rsplit("/", 1)[-1] for h in app.search("note4", k=3).hits] == ["f04.md"]
    [report] = app.index()
    assert (report.indexed, report.unchanged) == (25, 5)
