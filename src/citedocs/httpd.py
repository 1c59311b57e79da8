"""The HTTP server both front ends run under (`citedocs serve`, `citedocs mcp --http`).

The socket is bound before anything is printed, so a busy port is one error line, not a traceback after a
"serving" line. uvicorn alone waits forever for a request's head and body (a body trickled over 24 s was
accepted; 1,100 half-sent requests were all still held after 11 s), so the h11 protocol here arms one deadline
per request: the head must arrive within `http_header_timeout_s` of the connection opening (or of the last
response), the body within `http_body_timeout_s` of the head. A late head closes the connection; a late body
gets 408. `MAX_CONNECTIONS` caps open connections (uvicorn answers 503 beyond it).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import signal
import socket
from collections.abc import Callable
from types import FrameType
from typing import Any, ClassVar

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from citedocs.errors import ConfigError
from citedocs.hosts import loopback_only
from citedocs.settings import Settings

__all__ = ["bind", "refuse_open_without_auth", "serve"]

MAX_CONNECTIONS = 256  # open connections beyond this get 503
GRACEFUL_SHUTDOWN_S = 5  # open streams (SSE answers, MCP GET streams) get this long after SIGTERM


def refuse_open_without_auth(host: str, auth: str, no_auth: bool) -> None:
    """Serving other machines without tokens must be said on purpose: anyone who reaches the port could read
    every document and change the registry."""
    if not loopback_only(host) and auth == "none" and not no_auth:
        raise ConfigError(
            f"Refusing to serve {host} without authentication: every machine that reaches the port could read "
            "and change the index.",
            "Turn tokens on with `--auth tokens` (or CITEDOCS_AUTH=tokens; see docs/teams.md), or pass "
            "`--no-auth` to serve everyone on purpose.",
        )


def bind(host: str, port: int) -> socket.socket:
    """A listening socket (connections queue until the server accepts); port 0 picks a free one."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto IPPROTO_TCP, not 0: accepted sockets inherit it, and asyncio sets TCP_NODELAY only on sockets whose
    # proto says TCP. Without it every keep-alive response waited ~40 ms (Nagle + delayed ACK).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(
                f"Port {port} on {host} is already in use.",
                "Stop the process that holds it, or pick another with --port (0 picks a free one).",
            ) from None
        raise ConfigError(
            f"Cannot listen on {host}:{port}: {exc.strerror or exc}.",
            "Check --host (an address of this machine) and --port.",
        ) from None
    return sock


def _timeout_body(seconds: float) -> bytes:
    envelope = {
        "success": False,
        "data": None,
        "error": {
            "code": "request_timeout",
            "message": f"The request body did not arrive within {seconds:g} s.",
            "hint": "Send the whole request at once; on a slow link raise CITEDOCS_HTTP_BODY_TIMEOUT_S.",
        },
    }
    return json.dumps(envelope).encode("utf-8")


def _no_delay(transport: asyncio.Transport) -> None:
    """Send each response write at once (TCP_NODELAY), whatever socket the server was handed."""
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        with contextlib.suppress(OSError):  # the peer may already be gone
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class DeadlineH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for each request's head and body (set per server)."""

    header_timeout_s: ClassVar[float] = 10.0
    body_timeout_s: ClassVar[float] = 20.0
    _deadline: asyncio.TimerHandle | None = None

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(seconds, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        _no_delay(transport)
        super().connection_made(transport)
        self._arm(self.header_timeout_s)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        before = self.cycle
        super().handle_events()
        if self.cycle is not before and self.cycle is not None:
            self._arm(self.body_timeout_s)

    def on_response_complete(self) -> None:
        if not self.transport.is_closing():
            self._arm(self.header_timeout_s)  # before super(): it may start a pipelined request's cycle
        super().on_response_complete()

    def _expired(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        cycle = self.cycle
        if self.conn.their_state is h11.SEND_BODY and cycle is not None and cycle.more_body:
            if not cycle.response_started:
                body = _timeout_body(self.body_timeout_s)
                headers = [
                    (b"content-type", b"application/json"),
                    (b"connection", b"close"),
                    (b"content-length", str(len(body)).encode()),
                ]
                for event in (
                    h11.Response(status_code=408, headers=headers),
                    h11.Data(data=body),
                    h11.EndOfMessage(),
                ):
                    self.transport.write(self.conn.send(event) or b"")
            cycle.disconnected = (
                True  # the app's receive() now returns http.disconnect; its sends are dropped
            )
            cycle.message_event.set()
            self.transport.close()
        elif self.conn.their_state is h11.IDLE:  # a head still incomplete, or an idle connection
            self.transport.close()


def _protocol_for(settings: Settings) -> type[DeadlineH11Protocol]:
    limits = {
        "header_timeout_s": settings.http_header_timeout_s,
        "body_timeout_s": settings.http_body_timeout_s,
    }
    return type("DeadlineH11", (DeadlineH11Protocol,), limits)


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, on_ready: Callable[[], None]) -> None:
        super().__init__(config)
        self.on_ready = on_ready

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            self.on_ready()


def _stop_normally(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


def stop_normally_on_signals() -> None:
    """SIGTERM and Ctrl-C end the process with exit 0 (and its `finally` blocks run), also during start-up.

    uvicorn catches both while it serves and, once shut down, raises the caught signal again, which without
    this handler kills the process (-15) before the index is closed."""
    signal.signal(signal.SIGTERM, _stop_normally)
    signal.signal(signal.SIGINT, _stop_normally)


def serve(asgi: Any, sock: socket.socket, settings: Settings, on_ready: Callable[[], None]) -> None:
    """Serve `asgi` on the bound `sock` until SIGTERM or Ctrl-C; `on_ready` runs once it accepts."""
    config = uvicorn.Config(
        asgi,
        http=_protocol_for(settings),
        lifespan="on",
        log_level="warning",
        limit_concurrency=MAX_CONNECTIONS,
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
    )
    _Server(config, on_ready).run(sockets=[sock])
