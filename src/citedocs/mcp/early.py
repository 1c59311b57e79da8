"""`citedocs mcp` on stdio: the handshake and the first read-only calls are answered before the SDK is imported.

A client spawns the server, waits for `initialize` and `tools/list`, and an agent's first call is a `search`.
Importing the `mcp` SDK and building the server took ~0.8 s of CPU (bench/bench_startup.py); here the library
opens the index and writes the instructions, `handshake.py` answers the handshake from the SDK's recorded
replies and `early_calls.py` answers `search`, `read_file`, `list_folders` and `index_status` as the SDK
server would. The SDK is imported in the background 1 s after start-up (`_Later`), or at once when a message
the early loop does not answer arrives first (another tool, anything unusual); the real server then takes over
the session: it reads the client's `initialize` (re-sent with its own id, its reply dropped) and
`notifications/initialized` first, so it holds the same negotiated state as if it had answered them itself. No request is pending at that point: the early loop
answers each one before it reads the next.

The wire is claimed at once, as the SDK's own transport does: the protocol runs on private duplicates of
fds 0 and 1, fd 0 reads the null device and fd 1 goes to stderr, so nothing a handler or a child process
prints can corrupt the stream.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any, BinaryIO

from citedocs import __version__
from citedocs.mcp.budget import result_budget
from citedocs.mcp.early_calls import EarlyCalls
from citedocs.mcp.handshake import (
    REPLAYED,
    answers_enabled,
    initialize_result,
    instructions_for,
    recorded_versions,
    tools_list_result,
)

if TYPE_CHECKING:
    from mcp.server import MCPServer

    from citedocs.service import Citedocs
    from citedocs.settings import Settings

__all__ = ["EarlyHandshake", "claim_wire", "run_stdio", "start_background"]

log = logging.getLogger(__name__)

Wire = tuple[BinaryIO, BinaryIO]
Send = Callable[[dict[str, Any] | bytes], None]
BACKGROUND_AFTER_S = 1.0  # the model load, the watchers and the SDK import wait this long for the first calls


class _Stop(BaseException):  # not an Exception: an early tool call's crash handling must not swallow it
    """SIGTERM before the SDK took over: end like end of input."""


def claim_wire() -> Wire | None:
    """The protocol's own stdin/stdout (private duplicates); fd 0 then reads /dev/null and fd 1 writes to
    stderr (or /dev/null when there is no stderr). None where the descriptors cannot be duplicated, with fds 0
    and 1 as they were (the SDK then claims them itself, later)."""
    try:
        import fcntl
    except ImportError:  # Windows
        return None
    sys.stdout.flush()
    claimed: list[int] = []
    try:
        for fd in (0, 1):
            claimed.append(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3))
        null = os.open(os.devnull, os.O_RDWR)
        try:
            os.dup2(null, 0)
            try:
                os.dup2(2, 1)
            except OSError:  # no stderr: stray output goes nowhere rather than into the protocol
                os.dup2(null, 1)
        finally:
            os.close(null)
    except OSError:
        for fd, private in zip((0, 1), claimed, strict=False):
            with contextlib.suppress(OSError):
                os.dup2(private, fd)
            os.close(private)
        return None
    return os.fdopen(claimed[0], "rb"), os.fdopen(claimed[1], "wb")


class _ServerLoader(threading.Thread):
    """Imports the SDK and builds the server off the main thread, which waits for it (and for SIGTERM)."""

    def __init__(self, app: Citedocs, read_only: bool, instructions: str) -> None:
        super().__init__(name="citedocs-mcp-loader", daemon=True)
        self.app, self.read_only, self.instructions = app, read_only, instructions
        self.server: MCPServer | None = None
        self.failure: BaseException | None = None
        self.ready = threading.Event()

    def run(self) -> None:
        try:
            from citedocs.mcp.tools import build_server

            self.server = build_server(self.app, read_only=self.read_only, instructions=self.instructions)
        except BaseException as exc:  # re-raised on the main thread when the server is needed
            self.failure = exc
        finally:
            self.ready.set()

    def result(self) -> MCPServer:
        self.ready.wait()
        if self.failure is not None:
            raise self.failure
        assert self.server is not None
        return self.server


class EarlyHandshake:
    """Answers `initialize`, `notifications/initialized`, `tools/list` and `ping` from the recording, and
    the read-only calls `calls` can (`early_calls.py`); keeps what the SDK must replay; anything else is not
    its to answer (`reply` returns False)."""

    def __init__(
        self, instructions: str, *, read_only: bool, answers: bool, calls: EarlyCalls | None = None
    ) -> None:
        self.instructions = instructions
        self.read_only, self.answers = read_only, answers
        self.calls = calls
        self.protocols = recorded_versions()
        self.protocol: str | None = None  # set once `initialize` was answered here
        self.replay: list[bytes] = []
        self.answered: set[Any] = set()  # ids of the tool calls answered here

    def reply(self, line: bytes, send: Send) -> bool:
        """Answer `line` through `send` if it is a handshake message this can answer exactly as the SDK would."""
        message = _request(line)
        if message is None:
            return False
        method, request_id, params = message["method"], message.get("id"), message.get("params")
        if method == "ping" and request_id is not None and params in (None, {}):
            send({"jsonrpc": "2.0", "id": request_id, "result": {}})
            return True
        if method == "initialize" and request_id is not None and self.protocol is None:
            protocol = _initialize_protocol(params)
            result = initialize_result(protocol, self.instructions, __version__) if protocol else None
            if protocol not in self.protocols or result is None:
                return False
            self.protocol = protocol
            self.replay.append(json.dumps({**message, "id": REPLAYED}).encode() + b"\n")
            send({"jsonrpc": "2.0", "id": request_id, "result": result})
            return True
        if self.protocol is None:
            return False  # before initialize, the SDK says what is wrong
        if method == "notifications/initialized" and request_id is None and len(self.replay) == 1:
            self.replay.append(line if line.endswith(b"\n") else line + b"\n")
            return True
        if method == "tools/list" and request_id is not None and _no_cursor(params):
            tools = tools_list_result(self.protocol, read_only=self.read_only, answers=self.answers)
            if tools is None:
                return False
            send({"jsonrpc": "2.0", "id": request_id, "result": tools})
            return True
        if len(self.replay) < 2:
            return False  # a call before `notifications/initialized`: the SDK says what is wrong
        if method == "tools/call" and request_id is not None and self.calls is not None:
            answer = self.calls.reply(message, self.protocol)
            if answer is None:
                return False
            send(answer)
            self.answered.add(request_id)
            return True
        return method == "notifications/cancelled" and request_id is None and _cancels(params, self.answered)


def _cancels(params: Any, answered: set[Any]) -> bool:
    """A cancellation of a call already answered here: the SDK ignores it too (nothing is in flight)."""
    return (
        isinstance(params, dict)
        and set(params) <= {"requestId", "reason"}
        and params.get("requestId") in answered
    )


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # NaN, Infinity: the SDK's parser refuses them


def _request(line: bytes) -> dict[str, Any] | None:
    """A single JSON-RPC request or notification object, or None (batches, garbage: the SDK's to answer)."""
    try:
        message = json.loads(line, parse_constant=_refuse_constant)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return None
    if not isinstance(message.get("method"), str) or "result" in message or "error" in message:
        return None
    request_id = message.get("id")
    if "id" in message and (isinstance(request_id, bool) or not isinstance(request_id, str | int)):
        return None
    return message


def _initialize_protocol(params: Any) -> str | None:
    """The requested protocol version, when the params are of a shape the SDK is sure to accept."""
    if not isinstance(params, dict):
        return None
    info, capabilities = params.get("clientInfo"), params.get("capabilities")
    if not isinstance(info, dict) or not all(isinstance(info.get(k), str) for k in ("name", "version")):
        return None
    if not isinstance(capabilities, dict) or not all(isinstance(v, dict) for v in capabilities.values()):
        return None
    protocol = params.get("protocolVersion")
    return protocol if isinstance(protocol, str) else None


def _no_cursor(params: Any) -> bool:
    return params is None or (isinstance(params, dict) and set(params) <= {"_meta"})


def _send_to(out: BinaryIO) -> Send:
    def send(message: dict[str, Any] | bytes) -> None:
        if isinstance(message, dict):
            message = json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n"
        out.write(message)
        out.flush()

    return send


def _answer_until_needed(wire: Wire, early: EarlyHandshake) -> list[bytes] | None:
    """Answer what the early loop can until a message needs the server (returned with the replay first),
    or end of input (None)."""
    send = _send_to(wire[1])
    while True:
        line = wire[0].readline()
        if not line:
            return None
        if not early.reply(line, send):
            return [*early.replay, line]


class _Later:
    """What waits for the first calls: the background work (`start_background`) and the SDK's import, begun
    once, by a timer BACKGROUND_AFTER_S after start-up or at the hand-over, whichever comes first. A client
    that idles after the handshake (an agent's first tool call comes seconds later) finds the SDK imported; one
    that calls at once is not slowed by the import (~0.8 s CPU) before its early answers."""

    def __init__(self, app: Citedocs, read_only: bool, instructions: str) -> None:
        self.app, self.read_only, self.instructions = app, read_only, instructions
        self.lock = threading.Lock()
        self.loader: _ServerLoader | None = None

    def __call__(self) -> _ServerLoader:
        with self.lock:
            if self.loader is None:
                start_background(self.app)
                self.loader = _ServerLoader(self.app, self.read_only, self.instructions)
                self.loader.start()
            return self.loader


def start_background(app: Citedocs) -> None:
    """The embedding model loads, and the folder watchers start, in the background."""
    start = getattr(app, "start_model", None)
    if start is not None:
        start()
    watch = getattr(app, "start_watching", None)  # registered folders stay current while it serves
    if watch is not None:
        watch()


def run_stdio(settings: Settings, read_only: bool = False) -> None:
    """Serve MCP on stdin/stdout until the client closes stdin (every pending request answered first), or
    SIGTERM (`citedocs mcp`). Logs go to stderr."""
    from citedocs.service import Citedocs

    app = Citedocs(settings)
    previous = signal.getsignal(signal.SIGTERM)
    later: _Later | None = None
    timer: threading.Timer | None = None
    try:
        answers = answers_enabled(app)
        budget = result_budget(app.settings)
        instructions = instructions_for(app, read_only=read_only, max_chars=budget, answers=answers)
        later = _Later(app, read_only, instructions)
        timer = threading.Timer(BACKGROUND_AFTER_S, later)
        timer.daemon = True
        calls = EarlyCalls(app, budget)
        early = EarlyHandshake(instructions, read_only=read_only, answers=answers, calls=calls)
        wire = claim_wire()
        signal.signal(signal.SIGTERM, _raise_stop)
        timer.start()
        try:
            lines = _answer_until_needed(wire, early) if wire is not None else []
            if lines is None:
                return  # end of input: every message read has been answered
            server = later().result()  # the SDK, now that a message needs it
        except (_Stop, KeyboardInterrupt):
            return
        signal.signal(signal.SIGTERM, previous)
        import anyio

        from citedocs.mcp.stdio import serve_stdio

        anyio.run(serve_stdio, server, wire, lines)
    finally:
        if timer is not None:
            timer.cancel()
        signal.signal(signal.SIGTERM, previous)
        loader = later.loader if later is not None else None
        if loader is not None and loader.is_alive():
            loader.join()
        app.close()  # waits for a model load or background job still running (see Citedocs.close)


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    raise _Stop
