"""Bounded input and bounded load: a request-body cap and a count of answers in flight.

The body cap is checked twice: on Content-Length before a byte is read, and on the bytes actually received,
so a chunked upload without Content-Length is cut at the limit too. Answers beyond the limit are refused with
503 at once rather than queued: a queue inside the model server is invisible to clients and only raises
everyone's time to first token.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["MAX_BODY_BYTES", "AnswerSlots", "BodyLimitMiddleware", "BodyTooLarge", "error_envelope"]

# A question with a follow-up's history (at most 8,000 characters, answer/conversation.py) fits even as JSON
# \u escapes of Japanese (6 bytes a character).
MAX_BODY_BYTES = 96 * 1024


def error_envelope(code: str, message: str, hint: str, **extra: object) -> dict[str, object]:
    """The JSON every error response carries: what went wrong and what to do next."""
    return {
        "success": False,
        "data": None,
        "error": {"code": code, "message": message, "hint": hint, **extra},
    }


class BodyTooLarge(HTTPException):
    """Raised from `receive` when the bytes received pass the limit; FastAPI re-raises HTTPExceptions."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"The request body is larger than {limit} bytes.")
        self.limit = limit


def _too_large_body(limit: int) -> bytes:
    envelope = error_envelope(
        "body_too_large",
        f"The request body is larger than {limit // 1024} KB.",
        "Send a shorter question (at most 2000 characters) as JSON.",
    )
    return json.dumps(envelope).encode("utf-8")


class BodyLimitMiddleware:
    """413 for bodies over `limit` bytes, except under `exempt` path prefixes (mounted apps)."""

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY_BYTES, exempt: Sequence[str] = ()) -> None:
        self.app = app
        self.limit = limit
        self.exempt = tuple(p.rstrip("/") + "/" for p in exempt) + tuple(p.rstrip("/") for p in exempt)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or (self.exempt and path.startswith(self.exempt)):
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.limit:
            await self._refuse(send)
            return
        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise BodyTooLarge(self.limit)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except BodyTooLarge:
            if started:
                raise
            await self._refuse(send)

    async def _refuse(self, send: Send) -> None:
        body = _too_large_body(self.limit)
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


class AnswerSlots:
    """At most `limit` answers at once; `try_acquire` never waits."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self._in_flight = 0
        self._lock = threading.Lock()

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def try_acquire(self) -> bool:
        with self._lock:
            if self._in_flight >= self.limit:
                return False
            self._in_flight += 1
            return True

    def release(self) -> None:
        with self._lock:
            self._in_flight = max(0, self._in_flight - 1)
