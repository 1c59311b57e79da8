"""docs/configuration.md is generated from Settings: stale tables fail here (and so in CI)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from citedocs.cli.config_docs import BEGIN, END, PAGE, public_settings, render_tables, update_page
from citedocs.retired_settings import REMOVED, RENAMED
from citedocs.settings import Settings


def test_the_configuration_page_is_what_settings_generate() -> None:
    page = PAGE.read_text(encoding="utf-8")
    assert update_page(page) == page, (
        "run `python -m citedocs.cli.config_docs` and commit docs/configuration.md"
    )
    assert f"## The {len(public_settings())} public settings" in page


def test_every_setting_has_one_line_and_a_row() -> None:
    tables = render_tables()
    for name, info in Settings.model_fields.items():
        assert info.description and info.description.strip(), f"{name} has no description"
        assert f"| `CITEDOCS_{name.upper()}` |" in tables
    assert 25 <= len(public_settings()) <= 35


def test_time_settings_are_in_seconds_and_model_settings_share_one_prefix() -> None:
    names = list(Settings.model_fields)
    assert not [n for n in names if n.endswith(("_ms", "_seconds"))]
    assert not [n for n in names if n.startswith(("llama_", "model_", "models_", "local_model"))]


def test_retired_names_are_gone_and_their_replacements_exist() -> None:
    for old, renamed in RENAMED.items():
        assert old not in Settings.model_fields and renamed.new in Settings.model_fields
    assert not set(REMOVED) & set(Settings.model_fields)


def test_check_fails_on_a_stale_page_and_the_command_repairs_it(tmp_path: Path) -> None:
    page = tmp_path / "configuration.md"
    page.write_text(f"# Configuration\n\n{BEGIN}\n| old table |\n{END}\n\nMore.\n", encoding="utf-8")
    command = [sys.executable, "-m", "citedocs.cli.config_docs", "--page", str(page)]
    stale = subprocess.run([*command, "--check"], capture_output=True, text=True, timeout=60, check=False)
    assert stale.returncode == 1 and "is stale" in stale.stderr
    subprocess.run(command, check=True, timeout=60)
    fixed = page.read_text(encoding="utf-8")
    assert "| old table |" not in fixed and fixed.endswith("\n\nMore.\n") and "CITEDOCS_TOP_K" in fixed
    assert subprocess.run([*command, "--check"], timeout=60, check=False).returncode == 0
