"""Folders that hold keys, tokens, logs or other people's files cannot be registered over MCP or HTTP (an MCP
client steered by injected text added ~/.ssh and could read the key); only the CLI, told so with
--allow-system-folder, registers one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest
from mcp.client import Client

from citedocs.api import create_app
from citedocs.mcp.tools import build_server
from citedocs.service import Citedocs
from citedocs.settings import Settings
from citedocs.sources.secrets import secret_folder_problem
from fakes.live_server import live_server

HOME = Path("/home/alice")


@pytest.mark.parametrize(
    "folder",
    [
        "/home/alice/.ssh",
        "/home/alice/.aws/sso",
        "/home/alice/.gnupg",
        "/home/alice/.config/google-chrome",
        "/home/alice/.cache",
        "/home/alice/.mozilla/firefox",
        "/home/alice/.local/share/keyrings",
        "/home/alice/Library/Keychains",
        "/home/alice/snap/firefox",
        "/home/bob",
        "/home/bob/notes",
        "/Users/carol/Documents",
        "/root/.ssh",
        "/var/log",
        "/var/log/nginx",
        "/var/mail",
        "/usr/lib",
        "/usr/local/lib/python3",
        "/var/lib/postgresql",
        "/bin",
    ],
)
def test_secret_bearing_folders_are_named(folder: str) -> None:
    assert secret_folder_problem(Path(folder), HOME) is not None


@pytest.mark.parametrize(
    "folder",
    [
        "/home/alice/notes",
        "/home/alice/projects/app/docs",
        "/usr/share/doc",
        "/usr/share/doc/git",
        "/srv/docs",
        "/tmp/x",
        "/opt/manuals",
    ],
)
def test_document_folders_are_fine(folder: str) -> None:
    assert secret_folder_problem(Path(folder), HOME) is None


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    for name in (".ssh", ".cache", ".config/app", "notes"):
        (home / name).mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n", encoding="utf-8")
    monkeypatch.setenv("HOME", str(home))
    return home


def test_mcp_add_folder_refuses_secret_folders(tmp_path: Path, home: Path) -> None:
    app = Citedocs(Settings(db=str(tmp_path / "index.sqlite3"), embedder="none"))
    wanted = [str(home / ".ssh"), "~/.ssh", str(home / ".config" / "app"), "/var/log", "/usr/lib"]

    async def main() -> list[str]:
        said = []
        async with Client(build_server(app)) as client:
            for path in [p for p in wanted if Path(p).expanduser().is_dir()]:
                result = await client.call_tool("add_folder", {"path": path})
                assert result.is_error, path
                said.append(result.content[0].text)  # type: ignore[union-attr]
            ok = await client.call_tool("add_folder", {"path": str(home / "notes"), "index": False})
            assert not ok.is_error, ok.content
        return said

    said = anyio.run(main)
    assert len(said) >= 3 and all("cannot" in text for text in said), said
    assert app.folders() == [home / "notes"]
    app.close()


def test_http_post_sources_refuses_secret_folders(tmp_path: Path, home: Path) -> None:
    settings = Settings(db=str(tmp_path / "index.sqlite3"), embedder="none")
    library = Citedocs(settings)
    try:
        with live_server(create_app(settings, library)) as url:
            for path in (str(home / ".cache"), str(home / ".ssh"), "/var/log", "/usr/lib"):
                if not Path(path).is_dir():
                    continue
                reply = httpx.post(f"{url}/sources", json={"path": path})
                assert reply.status_code == 403, (path, reply.text)
                assert reply.json()["error"]["code"] == "access_denied"
            override = httpx.post(
                f"{url}/sources", json={"path": str(home / ".ssh"), "allow_system_folder": True}
            )
            assert override.status_code == 422  # HTTP has no override
        assert library.folders() == []
    finally:
        library.close()


def test_cli_refuses_a_secret_folder_unless_told_to(tmp_path: Path, home: Path) -> None:
    env = {**os.environ, "CITEDOCS_EMBEDDER": "none", "CITEDOCS_DB": str(tmp_path / "index.sqlite3")}

    def add(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "citedocs", "add", *args, "--no-index"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    refused = add(str(home / ".ssh"))
    said = " ".join((refused.stdout + refused.stderr).split())
    assert refused.returncode != 0 and f"citedocs add --allow-system-folder {home / '.ssh'}" in said, said
    allowed = add(str(home / ".ssh"), "--allow-system-folder")
    assert allowed.returncode == 0, allowed.stderr


def test_a_stray_key_folder_inside_a_registered_folder_is_never_indexed(tmp_path: Path) -> None:
    """A project folder with a copied `.ssh/` or `.aws/` in it: the documents are indexed, those folders are
    not walked, through the real `citedocs add` and `search`."""
    docs = tmp_path / "project"
    for name in (".ssh", ".aws", ".github"):
        (docs / name).mkdir(parents=True)
    (docs / ".ssh" / "notes.md").write_text(
        "# Keys\n\nzanzibar passphrase for the deploy key\n", encoding="utf-8"
    )
    (docs / ".aws" / "setup.md").write_text(
        "# Profile\n\nzanzibar access key for production\n", encoding="utf-8"
    )
    (docs / ".github" / "CONTRIBUTING.md").write_text(
        "# Contributing\n\nzanzibar reviews\n", encoding="utf-8"
    )
    (docs / "readme.md").write_text("# Readme\n\nzanzibar is the project name\n", encoding="utf-8")
    env = {**os.environ, "CITEDOCS_EMBEDDER": "none", "CITEDOCS_DB": str(tmp_path / "index.sqlite3")}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "citedocs", *args], env=env, capture_output=True, text=True, timeout=120
        )

    assert cli("add", str(docs), "--wait").returncode == 0
    found = cli("search", "zanzibar", "--json")
    assert found.returncode == 0, found.stderr
    paths = {Path(hit["path"]).relative_to(docs).as_posix() for hit in json.loads(found.stdout)["hits"]}
    assert paths == {"readme.md", ".github/CONTRIBUTING.md"}
