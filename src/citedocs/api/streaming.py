"""Answer events on the wire: server-sent events with keep-alive pings, and a JSON run that notices a client
leaving.

Both run the answer's event generator in its own task. When the client goes away, that task is cancelled and
awaited (shielded, bounded), so the model stream is closed — and the model server stops generating — before
the answer's slot is given back.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any

import anyio
from fastapi.sse import KEEPALIVE_COMMENT, EventSourceResponse, format_sse_event
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from citedocs.answer.events import AnswerEvent, collect, error_data

__all__ = ["PING_INTERVAL_S", "AnswerEventStream", "ClientGone", "encode_event", "run_until_disconnect"]

log = logging.getLogger(__name__)

PING_INTERVAL_S = 15.0
CANCEL_GRACE_S = 5.0
_END = object()


class ClientGone(Exception):
    """The client disconnected before the answer was ready."""


def encode_event(event: AnswerEvent) -> bytes:
    return format_sse_event(data_str=json.dumps(event.data, ensure_ascii=False), event=event.event)


def _internal_error() -> AnswerEvent:
    return AnswerEvent(
        "error",
        dict(
            error_data(
                "internal",
                "An internal error stopped the answer.",
                "Try again; if it persists, check the server log.",
                None,
            )
        ),
    )


async def _finish(task: asyncio.Task[Any]) -> None:
    """Cancel `task` and wait (shielded from our own cancellation, at most CANCEL_GRACE_S) until it ends."""
    task.cancel()
    with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_GRACE_S):
        await asyncio.wait({task})


async def sse_bytes(
    events: AsyncGenerator[AnswerEvent, None], ping_interval: float = PING_INTERVAL_S
) -> AsyncIterator[bytes]:
    """Encoded events, with a comment ping whenever the answer is silent for `ping_interval` seconds."""
    queue: asyncio.Queue[object] = asyncio.Queue(maxsize=1)

    async def pump() -> None:
        terminal = False
        try:
            async with contextlib.aclosing(events) as stream:
                async for event in stream:
                    terminal = terminal or event.terminal
                    await queue.put(event)
        except Exception:
            log.exception("answer stream failed")
            if not terminal:
                await queue.put(_internal_error())
        await queue.put(_END)

    task = asyncio.create_task(pump())
    try:
        while True:
            try:
                item = await asyncio.wait_for(queue.get(), ping_interval)
            except TimeoutError:
                yield KEEPALIVE_COMMENT
                continue
            if item is _END:
                break
            assert isinstance(item, AnswerEvent)
            yield encode_event(item)
    finally:
        await _finish(task)


class AnswerEventStream(EventSourceResponse):
    """An SSE response of one answer that calls `on_close` once it is over, however it ends."""

    def __init__(
        self,
        events: AsyncGenerator[AnswerEvent, None],
        on_close: Callable[[], None],
        ping_interval: float = PING_INTERVAL_S,
    ) -> None:
        super().__init__(
            sse_bytes(events, ping_interval), headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        )
        self._on_close = on_close

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._on_close()


async def _wait_for_disconnect(request: Request) -> None:
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


async def run_until_disconnect(request: Request, events: AsyncGenerator[AnswerEvent, None]) -> dict[str, Any]:
    """`collect(events)`, cancelled (model stream closed) if the client disconnects first: raises ClientGone.
    Raises AnswerFailed when the answer ends in an error event."""
    answer = asyncio.create_task(collect(events))
    gone = asyncio.create_task(_wait_for_disconnect(request))
    try:
        await asyncio.wait({answer, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
        if not answer.done():
            await _finish(answer)
    if answer.cancelled():
        raise ClientGone
    return answer.result()
