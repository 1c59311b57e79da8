"""Where a setting comes from, and what a user is told when one is wrong.

Sources, highest first: explicit values, the environment (`CITEDOCS_*`, any case), the `.env` file, then
`config.toml`; a bad value is a ConfigError naming the variable and where it was set, never a traceback, and a
secret's value is never shown.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from citedocs.errors import ConfigError
from citedocs.settings import Settings


@pytest.fixture
def files(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[Path, Path]:
    """An empty config.toml and .env, named by CITEDOCS_CONFIG and CITEDOCS_ENV_FILE."""
    config, env_file = tmp_path / "config.toml", tmp_path / "team.env"
    config.write_text("", encoding="utf-8")
    env_file.write_text("", encoding="utf-8")
    monkeypatch.setenv("CITEDOCS_CONFIG", str(config))
    monkeypatch.setenv("CITEDOCS_ENV_FILE", str(env_file))
    return config, env_file


def test_each_source_wins_over_the_ones_below_it(
    monkeypatch: pytest.MonkeyPatch, files: tuple[Path, Path]
) -> None:
    config, env_file = files
    config.write_text('top_k = 3\nsearch_mode = "keyword"\nllm_model = "from-toml"\nport = 9001\n')
    env_file.write_text("CITEDOCS_SEARCH_MODE=semantic\nCITEDOCS_LLM_MODEL=from-dotenv\nCITEDOCS_PORT=9002\n")
    monkeypatch.setenv("CITEDOCS_LLM_MODEL", "from-environment")
    monkeypatch.setenv("citedocs_port", "9003")  # any case, as shells and .env files write them
    settings = Settings(port=9004)
    assert (settings.top_k, settings.search_mode, settings.llm_model, settings.port) == (
        3,
        "semantic",
        "from-environment",
        9004,
    )
    assert Settings().port == 9003


def test_no_env_file_reads_none_and_other_names_are_ignored(
    monkeypatch: pytest.MonkeyPatch, files: tuple[Path, Path], tmp_path: Path
) -> None:
    config, env_file = files
    env_file.write_text("CITEDOCS_TOP_K=9\nOTHER_TOOL_PORT=1\nCITEDOCS_NOT_A_SETTING=1\n")
    config.write_text("not_a_setting = 1\n[some_table]\nkey = 1\n")
    assert Settings().top_k == 9
    assert Settings(_env_file=None).top_k != 9  # type: ignore[call-arg]
    monkeypatch.setenv("CITEDOCS_ENV_FILE", "")
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("CITEDOCS_TOP_K=8\n")
    assert Settings().top_k != 8  # "" reads no .env, not even the working directory's
    monkeypatch.delenv("CITEDOCS_ENV_FILE")
    assert Settings().top_k == 8


def test_comma_separated_lists_from_the_environment_and_lists_from_toml(
    monkeypatch: pytest.MonkeyPatch, files: tuple[Path, Path]
) -> None:
    config, _ = files
    config.write_text('extra_ignore_dirs = ["build", "dist"]\n')
    monkeypatch.setenv("CITEDOCS_MCP_ALLOWED_HOSTS", " docs.internal , , 10.0.0.5")
    settings = Settings()
    assert settings.extra_ignore_dirs == ["build", "dist"]
    assert settings.mcp_allowed_hosts == ["docs.internal", "10.0.0.5"]


def test_a_code_keyword_that_is_not_a_setting_is_refused(files: tuple[Path, Path]) -> None:
    with pytest.raises(TypeError, match="Settings has no 'top_kk'"):
        Settings(top_kk=3)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("environment", r"CITEDOCS_TOP_K \(environment\): .*integer.*, not 'many'\."),
        ("dotenv", r"CITEDOCS_TOP_K \(.*team\.env\): .*integer.*, not 'many'\."),
        ("toml", r"top_k \(.*config\.toml\): .*integer.*, not 'many'\."),
    ],
)
def test_a_bad_value_names_the_variable_and_where_it_was_set(
    monkeypatch: pytest.MonkeyPatch, files: tuple[Path, Path], source: str, expected: str
) -> None:
    config, env_file = files
    if source == "environment":
        monkeypatch.setenv("CITEDOCS_TOP_K", "many")
    elif source == "dotenv":
        env_file.write_text("CITEDOCS_TOP_K=many\n")
    else:
        config.write_text('top_k = "many"\n')
    with pytest.raises(ConfigError, match=expected) as caught:
        Settings()
    assert "docs/configuration.md" in caught.value.hint


def test_a_long_bad_value_is_shown_cut_and_escaped(
    monkeypatch: pytest.MonkeyPatch, files: tuple[Path, Path]
) -> None:
    monkeypatch.setenv("CITEDOCS_PORT", "\x1b[2J" + "9" * 5000)
    with pytest.raises(ConfigError, match=r"CITEDOCS_PORT \(environment\)") as caught:
        Settings()
    assert "\x1b" not in str(caught.value) and len(str(caught.value)) < 400


def test_a_config_file_of_any_name_shows_the_setting_as_written_there(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, files: tuple[Path, Path]
) -> None:
    config = tmp_path / "citedocs.conf"
    config.write_text('top_k = "many"\n', encoding="utf-8")
    monkeypatch.setenv("CITEDOCS_CONFIG", str(config))
    with pytest.raises(ConfigError, match=r"^top_k \(.*citedocs\.conf\): "):
        Settings()


def test_a_bad_secret_is_reported_without_its_value(
    monkeypatch: pytest.MonkeyPatch, files: tuple[Path, Path]
) -> None:
    config, _ = files
    config.write_text("llm_api_key = 123456789\n")
    with pytest.raises(ConfigError, match=r"llm_api_key \(.*config\.toml\)") as caught:
        Settings()
    assert "123456789" not in str(caught.value)


def test_a_broken_config_file_says_which_file_and_what_to_do(files: tuple[Path, Path]) -> None:
    config, _ = files
    config.write_text("top_k = \n")
    with pytest.raises(ConfigError, match=r"config\.toml cannot be read: .*line 1") as caught:
        Settings()
    assert "CITEDOCS_CONFIG" in caught.value.hint


@pytest.mark.parametrize("verb", [["status"], ["mcp"]])
def test_the_commands_print_the_message_not_a_traceback(tmp_path: Path, verb: list[str]) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITEDOCS_")}
    env.update(
        CITEDOCS_ENV_FILE="",
        CITEDOCS_CONFIG=str(tmp_path / "none.toml"),
        CITEDOCS_DB=str(tmp_path / "i.db"),
        CITEDOCS_WATCH_POLL_S="often",
    )
    done = subprocess.run(
        [sys.executable, "-m", "citedocs", *verb],
        env=env,
        input="",
        capture_output=True,
        text=True,
        timeout=60,
    )
    shown = done.stdout + done.stderr
    assert done.returncode != 0
    assert "CITEDOCS_WATCH_POLL_S (environment)" in shown and "'often'" in shown
    assert "Traceback" not in shown
