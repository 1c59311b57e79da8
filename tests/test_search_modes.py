"""Semantic and hybrid search, find_similar, the model fingerprint and resumable embedding, against a real
HTTP embeddings endpoint (a fake model on a socket)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from citedocs.errors import ModelMismatchError
from citedocs.service import Citedocs
from citedocs.settings import Settings
from fakes.embeddings_server import FakeEmbeddings

DOCS = {
    "install.md": "# Install\n\nDownload the installer and run setup to install Lumen on your laptop.\n",
    "network.md": "# Network\n\nThe daemon listens on port 7420 for HTTP queries and 9464 for metrics.\n",
    "backup.md": "# Backups\n\nCopy the data directory nightly; restore by stopping the daemon first.\n",
    "backup-copy.md": "# Backups\n\nCopy the data directory nightly; restore by stopping the daemon first!\n",
}


@pytest.fixture
def fake() -> Iterator[FakeEmbeddings]:
    with FakeEmbeddings().running() as server:
        yield server


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    for name, text in DOCS.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def _settings(tmp_path: Path, fake: FakeEmbeddings, model: str = "fake-model") -> Settings:
    return Settings(
        db=str(tmp_path / "i.db"), embedder="http", embed_base_url=fake.base_url, embed_model=model
    )


def _indexed(tmp_path: Path, fake: FakeEmbeddings, corpus: Path) -> Citedocs:
    app = Citedocs(_settings(tmp_path, fake))
    app.add_folder(corpus)
    app.index()
    report = app.embed()
    assert report is not None and report.done == report.total > 0
    return app


def test_every_mode_answers_and_hybrid_fuses_both(tmp_path: Path, fake: FakeEmbeddings, corpus: Path) -> None:
    app = _indexed(tmp_path, fake, corpus)
    for mode in ("keyword", "semantic", "hybrid"):
        result = app.search("metrics port", mode=mode, wait_for_model=True)
        assert result.mode == mode and result.note is None
        assert result.hits[0].path.endswith("network.md")


def test_unchanged_chunks_are_not_embedded_again(tmp_path: Path, fake: FakeEmbeddings, corpus: Path) -> None:
    app = _indexed(tmp_path, fake, corpus)
    texts = fake.texts
    (corpus / "new.md").write_text("# New\n\nA brand new page about upgrades.\n", encoding="utf-8")
    app.index()
    report = app.embed()
    assert report is not None and report.embedded == 1
    assert fake.texts - texts == 1
    (corpus / "new.md").unlink()
    app.index()
    app.embed()
    assert app.store.vector_counts() == (4, 4)


def test_keyword_answers_while_the_model_loads(tmp_path: Path, fake: FakeEmbeddings, corpus: Path) -> None:
    _indexed(tmp_path, fake, corpus).close()
    fake.hold.clear()  # the "model" will not answer until we let it
    app = Citedocs(_settings(tmp_path, fake))
    app.start_model()
    result = app.search("metrics port")  # hybrid by default, must not wait
    assert result.mode == "keyword"
    assert result.note and "loading" in result.note
    assert result.hits[0].path.endswith("network.md")
    assert app.status()["embedder"]["state"] == "loading"
    fake.hold.set()
    assert app.search("metrics port", wait_for_model=True).mode == "hybrid"


def test_unreachable_embedder_degrades_to_keyword_with_a_note(tmp_path: Path, corpus: Path) -> None:
    app = Citedocs(
        Settings(
            db=str(tmp_path / "i.db"),
            embedder="http",
            embed_base_url="http://127.0.0.1:9/v1",
            embed_model="x",
        )
    )
    app.add_folder(corpus)
    app.index()
    result = app.search("metrics port", wait_for_model=True)
    assert result.mode == "keyword" and result.note and "unavailable" in result.note
    assert result.hits


def test_model_fingerprint_mismatch_names_the_fix(tmp_path: Path, fake: FakeEmbeddings, corpus: Path) -> None:
    _indexed(tmp_path, fake, corpus).close()
    other = Citedocs(_settings(tmp_path, fake, model="another-model"))
    with pytest.raises(ModelMismatchError, match="reindex --force"):
        other.search("metrics port", mode="semantic", wait_for_model=True)
    degraded = other.search("metrics port", wait_for_model=True)
    assert degraded.mode == "keyword" and "reindex --force" in (degraded.note or "")
    with pytest.raises(ModelMismatchError, match="reindex --force"):
        other.embed()
    other.embed(force=True)
    assert other.search("metrics port", mode="semantic", wait_for_model=True).hits


def test_find_similar_ranks_the_near_duplicate_first(
    tmp_path: Path, fake: FakeEmbeddings, corpus: Path
) -> None:
    app = _indexed(tmp_path, fake, corpus)
    result = app.find_similar(str(corpus / "backup.md"), k=3)
    assert result.hits[0].path.endswith("backup-copy.md")
    assert all(not h.path.endswith("/backup.md") for h in result.hits)


_EMBED_SCRIPT = """
import sys
from citedocs.service import Citedocs
from citedocs.settings import Settings
app = Citedocs(Settings(db=sys.argv[1], embedder="http", embed_base_url=sys.argv[2], embed_model="fake-model",
                        embed_batch=4))
app.embed()
"""


@pytest.mark.slow
def test_kill_during_embedding_then_resume(tmp_path: Path, corpus: Path) -> None:
    for i in range(60):
        (corpus / f"extra{i}.md").write_text(f"# Extra {i}\n\nPage {i} about topic{i}.\n", encoding="utf-8")
    with FakeEmbeddings(delay_s=0.05).running() as fake:
        app = Citedocs(_settings(tmp_path, fake))
        app.add_folder(corpus)
        app.index()
        app.close()
        db = tmp_path / "i.db"
        proc = subprocess.Popen([sys.executable, "-c", _EMBED_SCRIPT, str(db), fake.base_url])
        while proc.poll() is None:
            conn = sqlite3.connect(db, timeout=5)
            have = conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
            conn.close()
            if have >= 12:
                break
        assert proc.poll() is None, "embedding finished before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        app = Citedocs(_settings(tmp_path, fake))
        partial, total = app.store.vector_counts()
        assert 12 <= partial < total == 64
        before = fake.texts
        report = app.embed()
        assert report is not None and report.done == report.total == 64
        # only the missing ones, plus the load probe (and the killed process's last batch if it was in flight)
        assert total - partial + 1 <= fake.texts - before <= total - partial + 1 + 4
        assert app.search("topic59", mode="semantic", wait_for_model=True).hits[0].path.endswith("extra59.md")
