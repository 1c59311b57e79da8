from __future__ import annotations

from pathlib import Path

from citedocs.cli.docs import render

DOC = Path(__file__).resolve().parents[1] / "docs" / "cli.md"


def test_cli_reference_is_current() -> None:
    assert DOC.read_text(encoding="utf-8") == render(), "run: python -m citedocs.cli.docs > docs/cli.md"


def test_every_documented_interface_command_exists() -> None:
    text = render()
    for name in [
        "add",
        "add-site",
        "remove",
        "list",
        "reindex",
        "status",
        "search",
        "ask",
        "serve",
        "mcp",
        "eval retrieval",
        "bench beir",
        "sites",
        "refresh",
        "fetch",
        "read",
    ]:
        assert f"`citedocs {name}`" in text
