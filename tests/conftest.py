from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
# The environment pytest started in, before `isolated_environment` cleans it for each test: the few tests
# that look for a developer's local model (CITEDOCS_LLM_SERVER, CITEDOCS_LLM_GGUF) read it from here.
OUTER_ENV = dict(os.environ)


@pytest.fixture(autouse=True)
def isolated_environment(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test (and every process it starts) sees no CITEDOCS_* of the user's, no `.env`, no config file,
    and a platform data dir of its own, so nothing reads or writes the user's real index."""
    for name in list(os.environ):
        if name.startswith("CITEDOCS_"):
            monkeypatch.delenv(name)
    home = tmp_path_factory.mktemp("platform-dirs")
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("CITEDOCS_CONFIG", str(home / "config" / "citedocs" / "config.toml"))
    monkeypatch.setenv("CITEDOCS_ENV_FILE", "")


def shared(*parts: str) -> Path:
    """A path under ../shared/data, or a skip saying what is missing."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"needs {path} (the shared data set is not on this machine)")
    return path


@pytest.fixture
def shared_data() -> Path:
    return shared()


# -- Answers over a one-file index ------------------------------------------------------------------


@contextlib.contextmanager
def one_file_library(tmp_path: Path, name: str, text: str) -> Iterator[Any]:
    """A keyword-only `Citedocs` on a real index in tmp_path of one document, `name` holding `text`."""
    from citedocs.service import Citedocs
    from citedocs.settings import Settings

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / name).write_text(text, encoding="utf-8")
    app = Citedocs(Settings(db=str(tmp_path / "index.sqlite3"), embedder="none", llm_read_timeout_s=2.0))
    try:
        app.add_folder(docs)
        app.index()
        yield app
    finally:
        app.close()


def last_answer_event(library: Any, base_url: str, question: str) -> Any:
    """The one terminal event (`done` or `error`) of `library`'s answer to `question`, its model at
    `base_url` (no retries)."""
    from citedocs.llm.client import LLMClient

    async def go() -> Any:
        async with LLMClient(base_url, "fake", read_timeout_s=2.0, backoff_s=0.01, max_retries=0) as llm:
            events = [e async for e in library.answer_service(llm).stream(question)]
        assert [e.terminal for e in events].count(True) == 1
        return events[-1]

    return asyncio.run(go())


# -- PostgreSQL ------------------------------------------------------------------------------------
# A real PostgreSQL 16 with pgvector from the `pgserver` wheel (a dev dependency), started once per test
# session; each test that asks for one gets a fresh database in it.


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Any]:
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
            import pgserver
    except ImportError:
        pytest.skip("needs the pgserver package (pip install -e '.[dev]') for a real PostgreSQL")
    # Not under pytest's tmp dir: run as root, pgserver starts PostgreSQL as another user, which cannot
    # enter pytest's private (0700) folders.
    data = Path(tempfile.mkdtemp(prefix="citedocs-pg-"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        server = pgserver.get_server(data, cleanup_mode="stop")
    yield server
    server.cleanup()
    shutil.rmtree(data, ignore_errors=True)


_PG_DATABASES = iter(range(1, 1_000_000))


@pytest.fixture
def pg_url(pg_server: Any) -> str:
    """A postgresql:// URL of a new, empty database."""
    import psycopg

    name = f"citedocs_test_{next(_PG_DATABASES)}"
    with psycopg.connect(pg_server.get_uri(), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return str(pg_server.get_uri(name))


@pytest.fixture(params=["sqlite", "postgres"])
def backend_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The `db` setting for each store backend: a SQLite file, then a PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "index.sqlite3")
    return str(request.getfixturevalue("pg_url"))
