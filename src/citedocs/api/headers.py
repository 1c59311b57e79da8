"""Security headers on every response (the page, the API, /docs, mounted apps such as /mcp), and HEAD wherever
GET is answered.

The Content-Security-Policy is one policy for every route: the page and /docs load only their own scripts and
styles (no inline script or style element, no CDN), connect only to this server, and may not be framed.
"""

from __future__ import annotations

from collections.abc import Mapping

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["CONTENT_SECURITY_POLICY", "SECURITY_HEADERS", "HeadAsGet", "SecurityHeaders"]

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",  # Swagger UI's icons are data: SVGs
        "font-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)
SECURITY_HEADERS: Mapping[str, str] = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cross-origin-opener-policy": "same-origin",
    "permissions-policy": "camera=(), microphone=(), geolocation=()",
}
_ENCODED = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in SECURITY_HEADERS.items()]


class SecurityHeaders:
    """Adds SECURITY_HEADERS to every HTTP response that does not set the header itself."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                headers.extend((name, value) for name, value in _ENCODED if name not in present)
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)


class HeadAsGet:
    """`HEAD` is answered as `GET` would be, headers only: the request goes on as a GET, its body is dropped,
    and a response that streams on (an event stream) is ended once its headers are sent."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return
        started = anyio.Event()

        async def headers_only(message: Message) -> None:
            if message["type"] == "http.response.start" and not started.is_set():
                await send(message)
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                started.set()

        async with anyio.create_task_group() as group:

            async def run() -> None:
                await self.app({**scope, "method": "GET"}, receive, headers_only)
                started.set()

            group.start_soon(run)
            await started.wait()
            group.cancel_scope.cancel()
