"""Start and supervise a local llama.cpp server for one GGUF file.

One slot per concurrent answer (`--parallel` = max_concurrent) and `-c` sized for all slots together, since
llama.cpp divides its context among them. It listens on a free port on 127.0.0.1 only, is ready when
`/health` answers 200, is restarted (with backoff, a bounded number of times) if it dies, and is stopped with
its whole process group on shutdown. Where llama.cpp's weight repacking makes it read prompts slower (CPUs with
AVX-512 VNNI, measured: `repack_args`), it is started with `--no-repack`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections import deque
from functools import cache
from pathlib import Path
from typing import Literal

import httpx

from citedocs.blas import child_environment
from citedocs.errors import ConfigError, LLMError
from citedocs.settings import Settings

__all__ = ["CTX_PER_SLOT", "LlamaServer", "cpu_flags", "free_port", "repack_args"]

CTX_PER_SLOT = 4096
MAX_RESTARTS = 5
RESTART_WINDOW_S = 600.0
_LOG_TAIL_BYTES = 2000


# Qwen2.5-Coder-1.5B Q4_K_M, llama.cpp 11434, 2 AMD EPYC cores with AVX-512 VNNI (bench/studies/bench_llama_flags.py):
# prompts are read at 68-71 tokens/s with repacked weights and 102-109 without, tokens written at 20-22 and
# 15-17, so an answer (~1,300 prompt tokens, ~70 written) takes ~5 s less without. Other CPUs keep the default.
REPACK_SLOWER_ON = frozenset({"avx512_vnni"})
Repack = Literal["auto", "on", "off"]
LLAMA_REPACK: Repack = "auto"  # "on"/"off" force it, for a measurement (bench/bench_llama_flags.py)


def repack_args(choice: Repack, flags: frozenset[str]) -> list[str]:
    """`["--no-repack"]` when repacking is turned off, or left to us on a CPU where it was measured slower."""
    if choice == "on":
        return []
    if choice == "off" or flags >= REPACK_SLOWER_ON:
        return ["--no-repack"]
    return []


@cache
def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags from /proc/cpuinfo (empty where there is none: not Linux)."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as info:
            for line in info:
                if line.startswith("flags"):
                    return frozenset(line.partition(":")[2].split())
    except OSError:
        pass
    return frozenset()


@cache
def _accepts(binary: str, option: str) -> bool:
    """Whether `binary --help` lists `option` (a user's older llama-server may not)."""
    try:
        shown = subprocess.run([binary, "--help"], capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return False
    return option.encode() in shown.stdout + shown.stderr


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


class LlamaServer:
    """A supervised `llama-server` child process; `state` is stopped, starting, ready, restarting or failed."""

    def __init__(
        self,
        gguf: str | Path,
        binary: str = "llama-server",
        *,
        parallel: int = 4,
        ctx_per_slot: int = CTX_PER_SLOT,
        threads: int | None = None,
        host: str = "127.0.0.1",
        startup_timeout_s: float = 300.0,
        log_path: str | Path | None = None,
        extra_args: tuple[str, ...] = (),
        repack: Repack = "auto",
    ) -> None:
        self.gguf = Path(gguf).expanduser()
        self.binary = binary
        self.parallel = max(1, parallel)
        self.ctx_per_slot = ctx_per_slot
        self.threads = threads
        self.host = host
        self.startup_timeout_s = startup_timeout_s
        self.log_path = (
            Path(log_path) if log_path else Path(tempfile.gettempdir()) / f"citedocs-llama-{os.getpid()}.log"
        )
        self.extra_args = extra_args
        self.repack = repack
        self.port = 0
        self.state = "stopped"
        self.last_error = ""
        self.restarts = 0
        self._process: asyncio.subprocess.Process | None = None
        self._supervisor: asyncio.Task[None] | None = None
        self._restart_times: deque[float] = deque(maxlen=MAX_RESTARTS)
        self._stopping = False
        self._log_start = 0

    @classmethod
    def from_settings(cls, settings: Settings, **options: object) -> LlamaServer:
        options.setdefault("repack", LLAMA_REPACK)
        return cls(settings.llm_gguf, settings.llm_server, parallel=settings.max_concurrent, **options)  # type: ignore[arg-type]

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def command(self) -> list[str]:
        binary = self._resolve_binary()
        args = [
            binary,
            "-m",
            str(self.gguf),
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--parallel",
            str(self.parallel),
            "-c",
            str(self.parallel * self.ctx_per_slot),
        ]
        if self.threads:
            args += ["-t", str(self.threads)]
        wanted = repack_args(self.repack, cpu_flags())
        if wanted and _accepts(binary, wanted[0]):  # an older llama-server would refuse to start
            args += wanted
        return args + list(self.extra_args)

    def _resolve_binary(self) -> str:
        found = shutil.which(self.binary)
        if found is None:
            raise ConfigError(
                f"The llama.cpp server binary {self.binary!r} was not found.",
                "Set CITEDOCS_LLM_SERVER to the path of llama-server, or CITEDOCS_LLM_BASE_URL to a running "
                "OpenAI-compatible server.",
            )
        return found

    async def start(self) -> None:
        """Start the server and wait until it is ready; then keep it alive in the background."""
        if not self.gguf.is_file():
            self.state, self.last_error = "failed", f"{self.gguf} does not exist."
            raise ConfigError(f"The model file {self.gguf} does not exist.", "Check CITEDOCS_LLM_GGUF.")
        self._stopping = False
        await self._spawn_and_wait()
        self._supervisor = asyncio.create_task(self._supervise(), name="llama-supervisor")

    async def _spawn_and_wait(self) -> None:
        self.state = "starting" if self.restarts == 0 else "restarting"
        self.port = self.port or free_port(self.host)
        command = self.command()
        self._log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
        with open(self.log_path, "ab") as log:
            self._process = await asyncio.create_subprocess_exec(
                *command,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
                env=child_environment(),  # its own threads: not this process's BLAS setting
            )
        try:
            await self._wait_ready()
        except BaseException:
            await self._kill()
            raise
        self.state = "ready"

    async def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout_s
        url = f"http://{self.host}:{self.port}/health"
        async with httpx.AsyncClient(trust_env=False, timeout=2.0) as client:
            while time.monotonic() < deadline:
                if self._process is None or self._process.returncode is not None:
                    tail = self.log_tail()
                    self.state, self.last_error = "failed", f"llama-server exited: {tail}"
                    raise LLMError(
                        f"llama-server exited during startup (code {self._process and self._process.returncode}): {tail}",
                        "Check CITEDOCS_LLM_GGUF and CITEDOCS_LLM_SERVER, and that there is enough memory.",
                    )
                with contextlib.suppress(httpx.HTTPError):
                    if (await client.get(url)).status_code == 200:
                        return
                await asyncio.sleep(0.25)
        self.state, self.last_error = "failed", "startup timed out"
        raise LLMError(
            f"llama-server was not ready after {self.startup_timeout_s:g} s.",
            "A large model loads slowly on CPU; try again, or use a smaller GGUF.",
        )

    def log_tail(self) -> str:
        """The end of what the current server wrote to its log, on one line."""
        try:
            with open(self.log_path, "rb") as log:
                log.seek(max(self._log_start, log.seek(0, os.SEEK_END) - _LOG_TAIL_BYTES))
                data = log.read()
        except OSError:
            return "no log"
        return " ".join(data.decode("utf-8", "replace").split())[-500:] or "no output"

    async def _supervise(self) -> None:
        while not self._stopping and self._process is not None:
            code = await self._process.wait()
            if self._stopping:
                return
            now = time.monotonic()
            self._restart_times.append(now)
            if len(self._restart_times) == MAX_RESTARTS and now - self._restart_times[0] < RESTART_WINDOW_S:
                self.state = "failed"
                self.last_error = (
                    f"llama-server died {MAX_RESTARTS} times in {RESTART_WINDOW_S:g} s (last code {code})"
                )
                return
            self.restarts += 1
            self.last_error = f"llama-server exited with code {code}; restarted"
            await asyncio.sleep(min(30.0, 0.5 * 2 ** (len(self._restart_times) - 1)))
            try:
                await self._spawn_and_wait()
            except (LLMError, ConfigError, OSError) as exc:
                self.last_error = str(exc)

    async def _kill(self) -> None:
        process = self._process
        if process is None or process.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), 10.0)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()

    async def stop(self) -> None:
        self._stopping = True
        if self._supervisor is not None:
            self._supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._supervisor
            self._supervisor = None
        await self._kill()
        self.state = "stopped"

    def describe(self) -> dict[str, object]:
        return {
            "state": self.state,
            "base_url": self.base_url if self.port else None,
            "pid": self.pid,
            "gguf": str(self.gguf),
            "parallel": self.parallel,
            "restarts": self.restarts,
            "last_error": self.last_error or None,
        }
