"""MCP over stdin/stdout that answers every request it read before it stops.

The SDK ends the session at end of input and cancels the handlers still running, so `cat requests.jsonl |
citedocs mcp` lost the replies to its last requests (3 of 3 runs). Here end of input waits until each request
read has been answered (or cancelled by the client), for at most `DRAIN_S`; SIGTERM and Ctrl-C end the session
the same way as end of input, without waiting.
"""

from __future__ import annotations

import signal
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse

if TYPE_CHECKING:
    from mcp.server import MCPServer

__all__ = ["DRAIN_S", "serve_stdio"]

DRAIN_S = 600.0  # an `ask` waits up to llm_read_timeout_s (180 s) between tokens


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


class _Reader:
    """The client's messages, noting requests; at end of input, ends only once they are answered."""

    def __init__(self, inner: Any, pending: _Pending) -> None:
        self.inner = inner
        self.pending = pending

    @property
    def last_context(self) -> Any:
        return getattr(self.inner, "last_context", None)

    async def receive(self) -> Any:
        try:
            item = await self.inner.receive()
        except anyio.EndOfStream:
            await self.pending.until_empty()
            raise
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
        await self.inner.send(item)
        if isinstance(item.message, JSONRPCResponse | JSONRPCError):
            self.pending.discard(item.message.id)

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> _Writer:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


async def serve_stdio(server: MCPServer) -> None:
    """Serve `server` on stdin/stdout until end of input (replies drained) or SIGTERM/SIGINT."""
    lowlevel = server._lowlevel_server  # the SDK's run_stdio_async does the same, without the drain
    async with anyio.create_task_group() as tg:

        async def stop_on_signal() -> None:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for _ in signals:
                    tg.cancel_scope.cancel()

        tg.start_soon(stop_on_signal)
        async with stdio_server() as (read_stream, write_stream):
            pending = _Pending()
            await lowlevel.run(_Reader(read_stream, pending), _Writer(write_stream, pending),
                               lowlevel.create_initialization_options())  # fmt: skip
        tg.cancel_scope.cancel()
