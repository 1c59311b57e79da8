"""The site commands through typer's CliRunner, against a real local docs server and a real index file."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from citedocs.cli.sites import register
from citedocs.service import Citedocs
from citedocs.settings import Settings
from fakes.docs_site import DocsSite, serve_docs

PAGE = "# Routing\n\nThe quokka router matches paths.\n"


@pytest.fixture
def site(tmp_path: Path) -> Iterator[DocsSite]:
    with serve_docs(tmp_path / "www") as docs:
        docs.write("docs/llms.txt", f"# Tiny\n\n- [Routing]({docs.url}/docs/routing.md): path matching\n")
        docs.write("docs/routing.md", PAGE)
        yield docs


@pytest.fixture
def cli(tmp_path: Path) -> tuple[CliRunner, typer.Typer, Path]:
    app = typer.Typer()
    register(app)
    runner = CliRunner(env={"CITEDOCS_ALLOWED_PRIVATE_HOSTS": "127.0.0.1", "CITEDOCS_EMBEDDER": "none"})
    return runner, app, tmp_path / "index.db"


def test_add_list_fetch_refresh(cli: tuple[CliRunner, typer.Typer, Path], site: DocsSite) -> None:
    runner, app, db = cli
    added = runner.invoke(app, ["add-site", "tiny", f"{site.url}/docs/llms.txt", "--db", str(db)])
    assert added.exit_code == 0, added.output
    assert "added tiny" in added.output and "1 docs" in added.output

    listed = runner.invoke(app, ["sites", "--json", "--db", str(db)])
    [entry] = json.loads(listed.stdout)
    assert {"name", "url", "docs", "pages_fetched", "status", "last_error", "last_refreshed"} <= set(entry)
    assert (entry["name"], entry["docs"], entry["status"], entry["last_error"]) == ("tiny", 1, "ready", None)
    table = runner.invoke(app, ["sites", "--db", str(db)])
    assert "tiny" in table.output and "ready" in table.output

    fetched = runner.invoke(app, ["fetch", f"{site.url}/docs/routing.md", "--db", str(db)])
    assert fetched.exit_code == 0 and fetched.stdout == PAGE
    as_json = json.loads(
        runner.invoke(app, ["fetch", f"{site.url}/docs/routing.md", "--json", "--db", str(db)]).stdout
    )
    assert (as_json["title"], as_json["source"], as_json["markdown"]) == ("Routing", "tiny", PAGE)

    settings = Settings(db=str(db), embedder="none")
    app_ = Citedocs(settings)
    try:
        assert app_.search("quokka", mode="keyword").hits[0].path == f"{site.url}/docs/routing.md"
    finally:
        app_.close()

    site.clear()
    refreshed = runner.invoke(app, ["refresh", "tiny", "--json", "--db", str(db)])
    assert refreshed.exit_code == 0, refreshed.output
    assert json.loads(refreshed.stdout)["changes"]["pages_unchanged"] == 1
    assert {r.status for r in site.requests} == {304}


def test_errors_exit_with_a_message_and_code(
    cli: tuple[CliRunner, typer.Typer, Path], site: DocsSite
) -> None:
    runner, app, db = cli
    assert (
        runner.invoke(app, ["add-site", "tiny", f"{site.url}/docs/llms.txt", "--db", str(db)]).exit_code == 0
    )
    again = runner.invoke(app, ["add-site", "tiny", f"{site.url}/docs/llms.txt", "--db", str(db)])
    assert again.exit_code == 1 and "already registered" in again.output
    outside = runner.invoke(app, ["fetch", f"{site.url}/elsewhere/page.md", "--db", str(db)])
    assert outside.exit_code == 4 and "refused" in outside.output
    missing = runner.invoke(app, ["refresh", "nope", "--db", str(db)])
    assert missing.exit_code == 3 and "citedocs sites" in missing.output


def test_sites_when_none_are_registered(cli: tuple[CliRunner, typer.Typer, Path]) -> None:
    runner, app, db = cli
    missing = runner.invoke(app, ["sites", "--json", "--db", str(db)])
    assert missing.exit_code == 2 and "citedocs add" in missing.output  # a read-only command creates no index
    Citedocs(Settings(db=str(db), embedder="none")).close()
    assert json.loads(runner.invoke(app, ["sites", "--json", "--db", str(db)]).stdout) == []
    assert "add-site" in runner.invoke(app, ["sites", "--db", str(db)]).output
