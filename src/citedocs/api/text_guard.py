"""The HTTP side of `text.invalid`: a JSON body holding a lone surrogate is refused with the JSON error
envelope (422 invalid_input) before any route sees it. Query strings and paths cannot carry one (Starlette
decodes them with replacement), so the body is the only door."""

from __future__ import annotations

import json
from collections.abc import Sequence

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from citedocs.api.errors import status_for
from citedocs.api.limits import error_envelope
from citedocs.errors import InputError
from citedocs.text.invalid import refuse_invalid_text

__all__ = ["TextGuard"]


class TextGuard:
    """Reads a request's body (already capped by BodyLimitMiddleware), checks it, then replays it."""

    def __init__(self, app: ASGIApp, exempt: Sequence[str] = ()) -> None:
        self.app = app
        self.exempt = tuple(p.rstrip("/") for p in exempt if p.rstrip("/"))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or scope.get("method") in ("GET", "HEAD") or path.startswith(self.exempt):
            await self.app(scope, receive, send)
            return
        messages: list[Message] = []
        body = b""
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        try:
            value = json.loads(body) if body else None
        except (ValueError, RecursionError):  # not JSON (or not UTF-8): the route's own validation answers
            value = None
        try:
            refuse_invalid_text(value, "body")
        except InputError as exc:
            status, code = status_for(exc)
            data = json.dumps(error_envelope(code, exc.message, exc.hint)).encode("utf-8")
            await send(
                {
                    "type": "http.response.start",
                    "status": status,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(data)).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": data})
            return

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)
