"""Nothing escapes a registered folder: raced reads, files swapped under the indexer, a folder swapped for a
symlink, system folders, unreadable folders and removal while indexing, done as an attacker would do them."""

from __future__ import annotations

import json
import logging
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from citedocs.errors import AccessDenied
from citedocs.index.folders import IndexProgress
from citedocs.mcp import build_server
from citedocs.service import Citedocs
from citedocs.settings import Settings

SECRET = "TOPSECRET-4471 outside the folder"
INSIDE = "harmless inside text"


def settings_for(tmp_path: Path) -> Settings:
    return Settings(db=str(tmp_path / "index.sqlite3"), embedder="none")


def cli(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "citedocs", *args, "--db", str(tmp_path / "index.sqlite3")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CITEDOCS_EMBEDDER": "none", **(env or {})},
    )


def said(done: subprocess.CompletedProcess[str]) -> str:
    """What a command printed, with the terminal's line wrapping undone."""
    return " ".join((done.stdout + done.stderr).split())


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    reg = tmp_path / "reg"
    reg.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(f"# Secret\n\n{SECRET}\n", encoding="utf-8")
    (reg / "race.md").write_text(f"# Race\n\n{INSIDE}\n", encoding="utf-8")
    return reg, outside


class Swapper:
    """Swaps reg/race.md between a regular file and a symlink to ../outside/secret.md with os.replace."""

    def __init__(self, reg: Path, staging: Path) -> None:
        self.reg, self.staging, self.swaps = reg, staging, 0
        self.stop = threading.Event()
        staging.mkdir(exist_ok=True)
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        while not self.stop.is_set():
            link = self.staging / "link"
            os.symlink("../outside/secret.md", link)
            os.replace(link, self.reg / "race.md")
            file = self.staging / "file"
            file.write_text(f"# Race\n\n{INSIDE}\n", encoding="utf-8")
            os.replace(file, self.reg / "race.md")
            self.swaps += 1

    def __enter__(self) -> Swapper:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(10)


def test_raced_reads_in_process_never_return_the_outside_file(
    layout: tuple[Path, Path], tmp_path: Path
) -> None:
    reg, _ = layout
    app = Citedocs(settings_for(tmp_path))
    app.add_folder(reg)
    served = refused = leaks = 0
    with Swapper(reg, tmp_path / "staging") as swapper:
        for _ in range(2000):
            try:
                text = app.read("race.md").text
            except AccessDenied:
                refused += 1
                continue
            leaks += SECRET in text
            served += INSIDE in text
    app.close()
    assert leaks == 0
    assert swapper.swaps > 0 and served > 0 and refused > 0  # both states were really met


def test_raced_read_file_over_real_mcp_stdio_never_leaks(layout: tuple[Path, Path], tmp_path: Path) -> None:
    reg, _ = layout
    assert cli(tmp_path, "add", str(reg)).returncode == 0
    env = {"CITEDOCS_EMBEDDER": "none", "CITEDOCS_CONFIG": str(tmp_path / "none.toml")}
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    params = StdioServerParameters(
        command=sys.executable,
        env=env,
        cwd=str(tmp_path),
        args=["-m", "citedocs.mcp", "--db", str(tmp_path / "index.sqlite3")],
    )
    counts = {"served": 0, "refused": 0, "leaks": 0}

    async def main() -> None:
        with (tmp_path / "stderr.txt").open("w", encoding="utf-8") as err:
            async with Client(stdio_client(params, errlog=err)) as client:
                for _ in range(1000):
                    result = await client.call_tool("read_file", {"path": "race.md"})
                    text = json.dumps(result.structured_content) if not result.is_error else ""
                    counts["leaks"] += SECRET in text or SECRET in str(result.content)
                    counts["served"] += INSIDE in text
                    counts["refused"] += bool(result.is_error)

    with Swapper(reg, tmp_path / "staging") as swapper:
        anyio.run(main)
    assert counts["leaks"] == 0, counts
    assert swapper.swaps > 0 and counts["served"] > 0 and counts["refused"] > 0, counts


def _swap_after_first_file(reg: Path, outside: Path) -> Any:
    """A progress hook: after the indexer has listed the folder and read one file, swap the later ones."""
    done = []

    def hook(state: IndexProgress) -> None:
        if not done and state.done == 1:
            done.append(True)
            (reg / "y.md").unlink()
            os.mkfifo(reg / "y.md")
            (reg / "z.md").unlink()
            os.symlink(outside / "secret.md", reg / "z.md")
            replaced = reg / "x.md.new"
            replaced.write_text("# X\n\nnew content\n", encoding="utf-8")
            os.replace(replaced, reg / "x.md")

    return hook


@pytest.mark.timeout(60)
def test_files_swapped_under_the_indexer_are_refused_and_it_finishes(
    layout: tuple[Path, Path], tmp_path: Path
) -> None:
    reg, outside = layout
    for name in ("a.md", "x.md", "y.md", "z.md"):
        (reg / name).write_text(f"# {name}\n\nplain words\n", encoding="utf-8")
    app = Citedocs(settings_for(tmp_path))
    app.add_folder(reg)
    [report] = app.index(progress=_swap_after_first_file(reg, outside))
    failures = dict(report.failures)
    assert "leaves the registered folder" in failures["z.md"]
    assert "FIFO" in failures["y.md"]
    assert "replaced while it was being indexed" in failures["x.md"]
    assert app.search("TOPSECRET", mode="keyword").hits == []
    status = app.status()
    assert {"running"}.isdisjoint(job["state"] for job in status["jobs"])
    assert {str(reg / "y.md"), str(reg / "z.md")} <= {f["path"] for f in status["failures"]}
    app.close()


def test_walk_reports_fifos_instead_of_skipping_them(layout: tuple[Path, Path], tmp_path: Path) -> None:
    reg, _ = layout
    os.mkfifo(reg / "pipe.md")
    app = Citedocs(settings_for(tmp_path))
    app.add_folder(reg)
    [report] = app.index()
    assert "a FIFO, not a regular file" in dict(report.failures)["pipe.md"]
    with pytest.raises(AccessDenied, match="FIFO"):
        app.read("pipe.md")
    app.close()


def test_a_folder_swapped_for_a_symlink_is_not_followed(layout: tuple[Path, Path], tmp_path: Path) -> None:
    reg, outside = layout
    assert cli(tmp_path, "add", str(reg)).returncode == 0
    reg.rename(tmp_path / "reg.orig")
    (outside / "race.md").write_text(f"# Race\n\n{SECRET}\n", encoding="utf-8")
    os.symlink(outside, reg)
    read = cli(tmp_path, "read", str(reg / "race.md"))
    assert read.returncode != 0 and SECRET not in read.stdout + read.stderr
    assert "replaced by a symlink" in said(read)
    assert f"citedocs remove {reg}` then `citedocs add {reg}`" in said(read)
    reindex = cli(tmp_path, "reindex")
    assert reindex.returncode != 0 and "replaced by a symlink" in said(reindex)
    found = cli(tmp_path, "search", "TOPSECRET", "--json")
    assert SECRET not in found.stdout


def test_a_folder_replaced_by_another_folder_is_refused(layout: tuple[Path, Path], tmp_path: Path) -> None:
    reg, _ = layout
    app = Citedocs(settings_for(tmp_path))
    app.add_folder(reg)
    reg.rename(tmp_path / "reg.orig")
    reg.mkdir()
    (reg / "race.md").write_text("# Other\n", encoding="utf-8")
    with pytest.raises(AccessDenied, match="now a different folder") as refused:
        app.read("race.md")
    assert f"citedocs remove {reg}" in refused.value.hint and f"citedocs add {reg}" in refused.value.hint
    with pytest.raises(AccessDenied, match="now a different folder"):
        app.index()
    app.remove(str(reg))
    app.add_folder(reg)
    assert app.read("race.md").text == "# Other\n"
    app.close()


def test_a_folder_registered_before_identities_gets_one_on_first_use(
    layout: tuple[Path, Path], tmp_path: Path
) -> None:
    reg, _ = layout
    app = Citedocs(settings_for(tmp_path))
    app.add_folder(reg)
    app.close()
    db = sqlite3.connect(tmp_path / "index.sqlite3")  # as an index written by the previous release
    db.execute("UPDATE sources SET options = ?", (json.dumps({"include": [], "exclude": []}),))
    db.commit()
    db.close()
    app = Citedocs(settings_for(tmp_path))
    assert INSIDE in app.read("race.md").text
    recorded = app.find_source(str(reg)).options["identity"]
    assert tuple(recorded) == (os.stat(reg).st_dev, os.stat(reg).st_ino)
    app.close()


@pytest.mark.parametrize("system", ["/", "/proc", "/etc", "/sys/kernel"])
def test_mcp_add_folder_refuses_system_folders(tmp_path: Path, system: str) -> None:
    if not Path(system).is_dir():
        pytest.skip(f"{system} is not a folder on this machine")
    app = Citedocs(settings_for(tmp_path))

    async def main() -> None:
        async with Client(build_server(app)) as client:
            result = await client.call_tool("add_folder", {"path": system})
            assert result.is_error
            text = result.content[0].text  # type: ignore[union-attr]
            assert "system" in text and "cannot" in text

    anyio.run(main)
    assert app.folders() == []
    app.close()


def test_cli_refuses_the_home_folder_unless_told_to(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "notes").mkdir(parents=True)
    refused = cli(tmp_path, "add", str(home), "--no-index", env={"HOME": str(home)})
    assert refused.returncode != 0 and f"citedocs add --allow-system-folder {home}`" in said(refused)
    allowed = cli(tmp_path, "add", str(home), "--no-index", "--allow-system-folder", env={"HOME": str(home)})
    assert allowed.returncode == 0, allowed.stderr
    subfolder = cli(
        tmp_path / "home" / "notes", "add", str(home / "notes"), "--no-index", env={"HOME": str(home)}
    )
    assert subfolder.returncode == 0, subfolder.stderr  # a folder inside the home folder is fine


def test_library_override_registers_a_system_root(tmp_path: Path) -> None:
    app = Citedocs(settings_for(tmp_path))
    with pytest.raises(AccessDenied, match="system root"):
        app.add_folder("/")
    assert app.add_folder("/", allow_system_folder=True).uri == "/"
    app.close()


def _without_dac_override() -> list[str]:
    """A prefix that runs a command without root's power to ignore permission bits (or none if not root)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root, and setpriv (util-linux) is missing to drop CAP_DAC_OVERRIDE")
    return [setpriv, "--bounding-set", "-dac_override,-dac_read_search", "--"]


def test_unreadable_folder_and_file_are_reported_even_as_root(tmp_path: Path) -> None:
    reg = tmp_path / "reg"
    (reg / "locked").mkdir(parents=True)
    (reg / "locked" / "inner.md").write_text("# Inner\n", encoding="utf-8")
    (reg / "ok.md").write_text("# Ok\n\nreadable\n", encoding="utf-8")
    (reg / "closed.md").write_text("# Closed\n", encoding="utf-8")
    os.chmod(reg / "locked", 0)
    os.chmod(reg / "closed.md", 0)
    try:
        command = [
            *_without_dac_override(),
            sys.executable,
            "-m",
            "citedocs",
            "add",
            str(reg),
            "--json",
            "--db",
            str(tmp_path / "index.sqlite3"),
        ]
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "CITEDOCS_EMBEDDER": "none"},
        )
        assert done.returncode == 0, done.stderr
        failures = {f["path"]: f["reason"] for f in json.loads(done.stdout)[0]["failures"]}
        assert "Permission denied" in failures["locked/"] and "not indexed" in failures["locked/"]
        assert "Permission denied" in failures["closed.md"]
        status = json.loads(cli(tmp_path, "status", "--json").stdout)
        assert {str(reg / "locked/"), str(reg / "closed.md")} <= {f["path"] for f in status["failures"]}
    finally:
        os.chmod(reg / "locked", 0o755)
        os.chmod(reg / "closed.md", 0o644)


def test_a_hard_link_is_indexed_as_the_file_it_is(layout: tuple[Path, Path], tmp_path: Path) -> None:
    """Decided: a hard link is the file itself, not a pointer out (see docs/limitations.md)."""
    reg, outside = layout
    os.link(outside / "secret.md", reg / "linked.md")
    app = Citedocs(settings_for(tmp_path))
    app.add_folder(reg)
    app.index()
    assert [h.path for h in app.search("TOPSECRET", mode="keyword").hits] == [str(reg / "linked.md")]
    app.close()


@pytest.fixture
def big_folder(tmp_path: Path) -> Iterator[Path]:
    reg = tmp_path / "big"
    reg.mkdir()
    for i in range(600):
        (reg / f"doc{i:04}.md").write_text(f"# Doc {i}\n\n" + "words and more words\n" * 40, encoding="utf-8")
    yield reg


@pytest.mark.timeout(120)
def test_remove_while_indexing_cancels_and_leaves_nothing(
    big_folder: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    app = Citedocs(settings_for(tmp_path))
    source = app.add_folder(big_folder)
    caplog.set_level(logging.WARNING, logger="citedocs.service")
    thread = app.index_in_background()
    deadline = time.monotonic() + 60
    while not any(j["state"] == "running" and j["done"] for j in app.status()["jobs"]):
        assert time.monotonic() < deadline and thread.is_alive(), app.status()["jobs"]
        time.sleep(0.005)
    app.remove(str(big_folder))
    thread.join(60)
    assert not thread.is_alive()
    assert "background indexing stopped" not in caplog.text
    db = sqlite3.connect(tmp_path / "index.sqlite3")
    left = {
        table: db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
        for table in ("sources", "documents", "chunks", "embeddings")
    }
    running = db.execute(
        "SELECT COUNT(*) FROM jobs WHERE state = 'running' AND source_id IS NOT NULL"
    ).fetchone()
    db.close()
    assert left == {"sources": 0, "documents": 0, "chunks": 0, "embeddings": 0}
    assert running[0] == 0
    assert app.status()["totals"]["chunks"] == 0 and source.id not in {
        j["source_id"] for j in app.status()["jobs"]
    }
    app.close()
