"""`citedocs add` returns once keyword search works and embeds in a detached `citedocs embed` (one per index);
`--wait` embeds in the foreground; `citedocs status` shows the background embedder (index/background.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from fakes.embeddings_server import FakeEmbeddings

DOC = "# Logs\n\nRotate the logs with `citedocs logs --rotate`; old logs are kept for 7 days.\n"


def citedocs(*args: str, db: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "CITEDOCS_DB": str(db), **env}
    return subprocess.run(
        [sys.executable, "-m", "citedocs", *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=120,
        check=False,
    )


def folder(root: Path, name: str, text: str = DOC) -> Path:
    path = root / name
    path.mkdir(parents=True)
    (path / "logs.md").write_text(text, encoding="utf-8")
    return path


def embedder_env(fake: FakeEmbeddings) -> dict[str, str]:
    return {
        "CITEDOCS_EMBEDDER": "http",
        "CITEDOCS_EMBED_BASE_URL": fake.base_url,
        "CITEDOCS_EMBED_MODEL": "m",
    }


def status(db: Path, env: dict[str, str]) -> dict[str, object]:
    proc = citedocs("status", "--json", db=db, env=env)
    assert proc.returncode == 0, proc.stderr
    data: dict[str, object] = json.loads(proc.stdout)
    return data


def gone(pid: int, seconds: float = 30.0) -> bool:
    """Whether the (detached, not our child) process `pid` has exited within `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_add_returns_before_embedding_and_one_embedder_takes_every_add(tmp_path: Path) -> None:
    db = tmp_path / "i.db"
    with FakeEmbeddings().running() as fake:
        env = embedder_env(fake)
        fake.hold.clear()  # the model answers nothing until the test lets it: embedding cannot finish
        first = citedocs("add", str(folder(tmp_path, "a")), db=db, env=env)
        assert first.returncode == 0, first.stderr
        assert "in the background" in first.stdout and "citedocs status" in first.stdout
        assert "embeddings:" not in first.stdout  # not embedded in the foreground
        found = citedocs("search", "rotate logs", "--mode", "keyword", "--json", db=db, env=env)
        assert found.returncode == 0, found.stderr
        assert json.loads(found.stdout)["hits"], "keyword search must work at once"
        shown = status(db, env)
        embedding = shown["embedding"]
        assert isinstance(embedding, dict) and embedding["pid"], shown
        assert shown["embedder"]["vectors"] == 0  # type: ignore[index]
        assert "embedding: running in the background" in citedocs("status", db=db, env=env).stdout
        second = citedocs("add", str(folder(tmp_path, "b", DOC.replace("Logs", "Archives"))), db=db, env=env)
        assert second.returncode == 0, second.stderr
        assert f"pid {embedding['pid']}" in second.stdout  # the running embedder takes these passages too
        # `citedocs embed` waits for the background embedder (held up by the model), then embeds what is left
        waiting = subprocess.Popen(
            [sys.executable, "-m", "citedocs", "embed"],
            text=True,
            env={**os.environ, "CITEDOCS_DB": str(db), **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert waiting.stderr is not None
        said = waiting.stderr.readline() + waiting.stderr.readline()
        assert f"waiting for the embedder already running on this index (pid {embedding['pid']})" in said
        fake.hold.set()
        assert waiting.wait(120) == 0
        assert gone(int(embedding["pid"]))
        after = status(db, env)
    assert after["embedding"] is None
    assert after["embedder"]["vectors"] == after["embedder"]["chunks"] == 2  # type: ignore[index]
    # Each passage embedded once (no second embedder raced the first), plus the dimension probe that each of
    # the two embedding processes (the background one and `citedocs embed`) sends when it loads the model.
    assert fake.texts == 2 + 2
    assert Path(f"{db}.embed.log").exists()


def test_add_wait_embeds_before_it_returns(tmp_path: Path) -> None:
    db = tmp_path / "i.db"
    with FakeEmbeddings().running() as fake:
        env = embedder_env(fake)
        proc = citedocs("add", str(folder(tmp_path, "a")), "--wait", db=db, env=env)
        assert proc.returncode == 0, proc.stderr
        assert "in the background" not in proc.stdout and "embeddings: 1 chunks embedded" in proc.stdout
        shown = status(db, env)
    assert shown["embedding"] is None and shown["embedder"]["vectors"] == 1  # type: ignore[index]
    assert not Path(f"{db}.embed.log").exists()


def test_add_without_an_embedder_starts_no_background_job(tmp_path: Path) -> None:
    db = tmp_path / "i.db"
    proc = citedocs("add", str(folder(tmp_path, "a")), db=db, env={"CITEDOCS_EMBEDDER": "none"})
    assert proc.returncode == 0, proc.stderr
    assert "background" not in proc.stdout and not Path(f"{db}.embed.log").exists()


def test_a_killed_background_embedder_loses_nothing(tmp_path: Path) -> None:
    db = tmp_path / "i.db"
    with FakeEmbeddings().running() as fake:
        env = embedder_env(fake)
        fake.hold.clear()
        assert citedocs("add", str(folder(tmp_path, "a")), db=db, env=env).returncode == 0
        embedding = status(db, env)["embedding"]
        assert isinstance(embedding, dict)
        os.kill(int(embedding["pid"]), 9)
        assert gone(int(embedding["pid"]))
        assert status(db, env)["embedding"] is None  # its lease went with it
        fake.hold.set()
        again = citedocs("add", str(folder(tmp_path, "b", DOC.replace("Logs", "Archives"))), db=db, env=env)
        assert "in the background" in again.stdout and f"pid {embedding['pid']}" not in again.stdout
        assert citedocs("embed", db=db, env=env).returncode == 0
        after = status(db, env)
    assert after["embedder"]["vectors"] == after["embedder"]["chunks"] == 2  # type: ignore[index]


def test_a_running_server_takes_the_embedding_with_its_warm_model(tmp_path: Path) -> None:
    db = tmp_path / "i.db"
    with FakeEmbeddings().running() as fake:
        env = {**embedder_env(fake), "CITEDOCS_WATCH": "false"}
        server = subprocess.Popen(
            [sys.executable, "-m", "citedocs", "serve", "--port", "0"],
            text=True,
            env={**os.environ, "CITEDOCS_DB": str(db), **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        try:
            assert server.stdout is not None
            for line in server.stdout:
                if "serving http" in line:
                    break
            added = citedocs("add", str(folder(tmp_path, "a")), db=db, env=env)
            assert added.returncode == 0, added.stderr
            assert "on the running server" in added.stdout and "pid" not in added.stdout
            assert not Path(f"{db}.embed.log").exists()  # no process of its own
            deadline = time.monotonic() + 60
            while status(db, env)["embedder"]["vectors"] != 1 and time.monotonic() < deadline:  # type: ignore[index]
                time.sleep(0.2)
            assert status(db, env)["embedder"]["vectors"] == 1  # type: ignore[index]
        finally:
            server.terminate()
            server.wait(30)
