"""A native llama-server built in the background while the prebuilt one answers (issue 41).

The prebuilt server (the `xllamacpp` wheel) is compiled for AVX2, so on a CPU with AVX-512 it reads prompts
much slower than llama.cpp compiled here. `citedocs serve`, started with only the prebuilt server, answers with
it at once and starts `citedocs model install --build` as a detached process at nice 19 (one per models
folder: the build's lock); the running model handle moves to the built server when it appears
(`install.better_server`). An interrupted build resumes the next time (llm/build.py).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from citedocs.llm.build import build_percent, builder_pid, missing_tools
from citedocs.llm.install import ModelPaths, chosen_model, server_binary, server_kind
from citedocs.llm.llama import cpu_flags
from citedocs.llm.pool import split_urls
from citedocs.settings import Settings

__all__ = [
    "NATIVE_FASTER_ON",
    "BuildState",
    "build_state",
    "build_wanted",
    "note",
    "start_background_build",
]

# Qwen2.5-Coder-1.5B Q4_K_M, two answer prompts (970 and 1,459 tokens), 2 idle Intel Xeon cores with AVX-512
# and AMX (bench/bench_server_builds.py, docs/models.md): the prebuilt server read 37.5 prompt tokens/s, a native
# build 80.9, 2.2x faster. On AVX2-only CPUs both use the same kernels, so a build is not worth it.
NATIVE_FASTER_ON = frozenset({"avx512f"})
LOG_NAME = "background-build.log"  # in the models folder: what the background `model install --build` printed


def note(message: str) -> None:
    """One plain line on stderr for whoever runs `serve` (logging would pass it to the Rich handler the MCP SDK
    installs on the root logger, which wraps it over several lines)."""
    print(f"citedocs: {message}", file=sys.stderr, flush=True)


def build_wanted(choice: str, flags: Collection[str], missing: Collection[str]) -> bool:
    """Whether to build a native server in the background: never when turned off or without a toolchain;
    with `auto`, only on a CPU where it was measured faster."""
    if choice == "off" or missing:
        return False
    return choice == "on" or NATIVE_FASTER_ON.issubset(flags)


@dataclass(frozen=True, slots=True)
class BuildState:
    """A `model install --build` running in the models folder: who, how far the compile is, its log."""

    pid: int
    percent: int | None
    log: str

    def to_dict(self) -> dict[str, Any]:
        return {"pid": self.pid or None, "percent": self.percent, "log": self.log}


def build_state(settings: Settings) -> BuildState | None:
    """The build running in this models folder (ours in the background, or one in another terminal), or None."""
    paths = ModelPaths.from_settings(settings)
    pid = builder_pid(paths.root)
    if pid is None:
        return None
    log = (
        paths.build_log if paths.build_log.exists() else paths.root / LOG_NAME
    )  # the compile's, once it runs
    return BuildState(pid, build_percent(paths.build_log), str(log))


def start_background_build(settings: Settings) -> int | None:
    """Start `citedocs model install --build` detached at nice 19 when `serve` would answer with the prebuilt
    server and `build_wanted` says so; its pid, or None when it is not needed, not wanted, or already running."""
    if split_urls(settings.llm_base_url) or settings.llm_background_build == "off":
        return None
    model = chosen_model(settings)
    if model is None or server_kind(settings, server_binary(settings)) != "prebuilt":
        return None
    if not build_wanted(settings.llm_background_build, cpu_flags(), missing_tools()):
        return None
    paths = ModelPaths.from_settings(settings)
    if builder_pid(paths.root) is not None:
        return None
    nice = shutil.which("nice")
    command = [
        sys.executable,
        "-m",
        "citedocs",
        "model",
        "install",
        "--build",
        "--json",
        "--model",
        model.name,
    ]
    with open(paths.root / LOG_NAME, "wb") as log:
        process = subprocess.Popen(
            [nice, "-n", "19", *command] if nice else command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # outlives `serve`: the next start finds it done, or resumes it
        )
    threading.Thread(target=process.wait, name="native-build-reaper", daemon=True).start()
    return process.pid
