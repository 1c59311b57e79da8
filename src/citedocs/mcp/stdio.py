"""MCP over stdin/stdout that answers every request it read before it stops.

The SDK ends the session at end of input and cancels the handlers still running, so `cat requests.jsonl |
citedocs mcp` lost the replies to its last requests (3 of 3 runs). Here end of input waits until each request
read has been answered (or cancelled by the client), for at most `DRAIN_S`; SIGTERM and Ctrl-C end the session
the same way as end of input, without waiting.

A session whose handshake was already answered (`mcp/early.py`) starts here with those messages replayed: the
SDK reads them first and its replies to them (`REPLAYED` ids) are not sent again.
"""

from __future__ import annotations

import io
import json
import logging
import signal
from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, BinaryIO

import anyio
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import (
    INVALID_PARAMS,
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

from citedocs.errors import InputError
from citedocs.mcp.handshake import REPLAYED
from citedocs.text.invalid import invalid_text, refuse_invalid_text

if TYPE_CHECKING:
    from mcp.server import MCPServer

__all__ = ["DRAIN_S", "serve_stdio"]

DRAIN_S = 600.0  # an `ask` waits up to llm_read_timeout_s (180 s) between tokens

log = logging.getLogger(__name__)


class _Pending:
    """Ids of the requests read and not yet answered."""

    def __init__(self) -> None:
        self.ids: set[Any] = set()
        self.changed = anyio.Event()

    def discard(self, request_id: Any) -> None:
        self.ids.discard(request_id)
        self.changed.set()

    async def until_empty(self) -> None:
        with anyio.move_on_after(DRAIN_S):
            while self.ids:
                self.changed = anyio.Event()
                await self.changed.wait()


def _refusal(item: Exception) -> JSONRPCError | None:
    """The reply to a request the SDK could not parse because its text is not valid Unicode (a lone surrogate
    escape, which JSON allows and pydantic's parser refuses): the same InputError as the HTTP API's, as invalid
    params under the request's own id. The SDK would drop it without a reply."""
    if not isinstance(item, ValidationError):
        return None
    for error in item.errors():
        if error.get("type") != "json_invalid" or not isinstance(error.get("input"), str):
            continue
        try:
            request = json.loads(error["input"])
        except (ValueError, RecursionError):
            return None
        if (
            not isinstance(request, dict)
            or not isinstance(request.get("id"), int | str)
            or "method" not in request
        ):
            return None
        if invalid_text(request["id"]) is not None:
            return None
        try:
            refuse_invalid_text(request.get("params"), "params")
        except InputError as exc:
            message = f"{exc.message} {exc.hint}"
            return JSONRPCError(
                jsonrpc="2.0", id=request["id"], error=ErrorData(code=INVALID_PARAMS, message=message)
            )
    return None


def _parsed(line: bytes) -> SessionMessage | Exception:
    """A line as the SDK's own stdin reader turns it into a message (or the error it reports)."""
    try:
        text = line.decode("utf-8", errors="replace")
        return SessionMessage(jsonrpc_message_adapter.validate_json(text, by_name=False))
    except Exception as exc:  # the SDK's reader sends any parse failure on as the item
        return exc


class _Reader:
    """The client's messages (the replayed ones first), noting requests; at end of input, ends only once
    they are answered."""

    def __init__(
        self, inner: Any, pending: _Pending, replay: Sequence[bytes] = (), replies: Any = None
    ) -> None:
        self.inner = inner
        self.replies = replies
        self.pending = pending
        self.replay = [_parsed(line) for line in replay]
        self.replaying = False

    @property
    def last_context(self) -> Any:
        return None if self.replaying else getattr(self.inner, "last_context", None)

    async def receive(self) -> Any:
        self.replaying = bool(self.replay)
        while True:
            if self.replay:
                item = self.replay.pop(0)
            else:
                try:
                    item = await self.inner.receive()
                except anyio.EndOfStream:
                    await self.pending.until_empty()
                    raise
            if not isinstance(item, Exception):
                break
            refusal = _refusal(item)
            if refusal is None or self.replies is None:
                log.warning("a message from the client could not be read: %s", str(item).splitlines()[0])
                break
            log.warning("refused request %s: %s", refusal.id, refusal.error.message)
            await self.replies.send(SessionMessage(refusal))
        message = item.message if isinstance(item, SessionMessage) else None
        if isinstance(message, JSONRPCRequest):
            self.pending.ids.add(message.id)
        elif isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
            self.pending.discard((message.params or {}).get("requestId"))
        return item

    def __aiter__(self) -> _Reader:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> _Reader:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


class _Writer:
    """The server's messages; a response or error marks its request answered."""

    def __init__(self, inner: Any, pending: _Pending) -> None:
        self.inner = inner
        self.pending = pending

    async def send(self, item: SessionMessage, /) -> None:
        message = item.message
        if not isinstance(message, JSONRPCResponse | JSONRPCError):
            await self.inner.send(item)
            return
        if message.id != REPLAYED:
            await self.inner.send(item)
        elif isinstance(message, JSONRPCError):  # the early answer said yes where the SDK says no
            log.error("the replayed initialize was refused: %s", message.error.message)
        self.pending.discard(message.id)

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> _Writer:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


class _Unowned(io.TextIOWrapper):
    """Text over the wire's bytes; closing it leaves the wire open (it is not this layer's to close)."""

    def close(self) -> None:
        if not self.closed:
            self.detach()


async def serve_stdio(
    server: MCPServer,
    wire: tuple[BinaryIO, BinaryIO] | None = None,
    replay: Sequence[bytes] = (),
) -> None:
    """Serve `server` until end of input (replies drained) or SIGTERM/SIGINT: on the process's stdin and
    stdout, or on `wire` (input, output) that `mcp/early.py` claimed, reading the `replay` lines first."""
    lowlevel = server._lowlevel_server  # the SDK's run_stdio_async does the same, without the drain
    streams: dict[str, Any] = {}
    if wire is not None:
        streams = {
            "stdin": anyio.wrap_file(_Unowned(wire[0], encoding="utf-8", errors="replace")),
            "stdout": anyio.wrap_file(_Unowned(wire[1], encoding="utf-8")),
        }
    try:
        async with anyio.create_task_group() as tg:

            async def stop_on_signal() -> None:
                with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                    async for _ in signals:
                        tg.cancel_scope.cancel()

            tg.start_soon(stop_on_signal)
            async with stdio_server(**streams) as (read_stream, write_stream):
                pending = _Pending()
                await lowlevel.run(
                    _Reader(read_stream, pending, replay, write_stream),
                    _Writer(write_stream, pending),
                    lowlevel.create_initialization_options(),
                )
            tg.cancel_scope.cancel()
    finally:
        close = getattr(server, "answers_close", None)  # the model server `ask` started, if any
        if close is not None:
            with anyio.CancelScope(shield=True):
                await close()
