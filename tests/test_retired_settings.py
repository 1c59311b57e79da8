"""A renamed or removed CITEDOCS_* setting is reported, naming what replaced it, wherever it is still set."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from citedocs.retired_settings import RetiredSettingWarning
from citedocs.settings import Settings


def test_a_renamed_variable_still_works_and_warns_with_the_new_name(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CITEDOCS_LLAMA_SERVER", "/opt/llama/bin/llama-server")
    with pytest.warns(
        RetiredSettingWarning,
        match=r"CITEDOCS_LLAMA_SERVER \(environment\) is now called "
        r"CITEDOCS_LLM_SERVER",
    ):
        settings = Settings(db=str(tmp_path / "i.db"))
    assert settings.llm_server == "/opt/llama/bin/llama-server"


def test_the_new_name_wins_over_the_old_one(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CITEDOCS_MODEL_CATALOG", "/old.json")
    monkeypatch.setenv("CITEDOCS_LLM_CATALOG", "/new.json")
    with pytest.warns(RetiredSettingWarning, match="CITEDOCS_LLM_CATALOG"):
        assert Settings(db=str(tmp_path / "i.db")).llm_catalog == "/new.json"


def test_milliseconds_in_a_dotenv_file_become_seconds(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    env_file = tmp_path / "old.env"
    env_file.write_text("CITEDOCS_WATCH_DEBOUNCE_MS=250\n", encoding="utf-8")
    monkeypatch.setenv("CITEDOCS_ENV_FILE", str(env_file))
    with pytest.warns(
        RetiredSettingWarning,
        match=rf"CITEDOCS_WATCH_DEBOUNCE_MS \({env_file}\).*"
        r"CITEDOCS_WATCH_DEBOUNCE_S \(in seconds now\)",
    ):
        assert Settings(db=str(tmp_path / "i.db")).watch_debounce_s == 0.25


def test_a_removed_setting_in_config_toml_is_ignored_and_says_what_happens_now(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text("min_supported = 0.0\ntop_k = 7\n", encoding="utf-8")
    monkeypatch.setenv("CITEDOCS_CONFIG", str(config))
    with pytest.warns(
        RetiredSettingWarning,
        match=r"CITEDOCS_MIN_SUPPORTED \(.*config.toml\) was removed and "
        r"is ignored: an answer with under half",
    ):
        settings = Settings(db=str(tmp_path / "i.db"))
    assert settings.top_k == 7 and not hasattr(settings, "min_supported")


def test_code_passing_a_retired_setting_is_an_error_naming_the_replacement() -> None:
    with pytest.raises(TypeError, match="now called 'llm_server'"):
        Settings(llama_server="x")
    with pytest.raises(TypeError, match=r"removed.*PASSAGE_OVERLAP"):
        Settings(passage_overlap=0.0)


def test_the_command_prints_one_warning_line_and_goes_on(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "CITEDOCS_DB": str(tmp_path / "i.db"),
        "CITEDOCS_EMBEDDER": "none",
        "CITEDOCS_EVIDENCE_TOKENS": "450",
    }
    (tmp_path / "docs").mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "citedocs", "add", str(tmp_path / "docs")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.startswith(
        "warning: CITEDOCS_EVIDENCE_TOKENS (environment) was removed and is ignored: the model reads every "
        "passage whole"
    )
