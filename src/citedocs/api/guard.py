"""One Host/Origin check in front of every route, against DNS rebinding: the allow-list of citedocs/hosts.py,
answered as the HTTP API answers errors (421 for a Host, 403 for an Origin)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from starlette.types import ASGIApp, Receive, Scope, Send

from citedocs.api.limits import error_envelope
from citedocs.hosts import LOOPBACK_NAMES, SETTING, allowed_hosts, allowed_origins, matches

__all__ = ["LOOPBACK_NAMES", "HostGuard", "allowed_hosts", "allowed_origins", "matches"]


class HostGuard:
    """421 for a Host that is not allowed, 403 for a foreign Origin, before any route (or mount) runs."""

    def __init__(self, app: ASGIApp, hosts: Sequence[str], origins: Sequence[str]) -> None:
        self.app = app
        self.hosts = [h.lower() for h in hosts]
        self.origins = [o.lower() for o in origins]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {name: value.decode("latin-1") for name, value in scope.get("headers", [])}
        host, origin = headers.get(b"host"), headers.get(b"origin")
        if host is None or not matches(host, self.hosts):
            await self._refuse(
                scope,
                send,
                421,
                "host_not_allowed",
                f"This server does not answer to the name {_shown(host)}.",
                f"Open it as {self._home(scope)}; to serve it under another name, add that "
                f"name to {SETTING} (comma-separated, e.g. docs.internal or "
                "docs.internal:443).",
            )
        elif origin is not None and not matches(origin, self.origins):
            await self._refuse(
                scope,
                send,
                403,
                "origin_not_allowed",
                f"Requests from pages at {_shown(origin)} are not allowed.",
                f"Use the citedocs page itself ({self._home(scope)}); to let pages of "
                f"another name call it, add that name to {SETTING}.",
            )
        else:
            await self.app(scope, receive, send)

    @staticmethod
    def _home(scope: Scope) -> str:
        server = scope.get("server") or ("127.0.0.1", None)
        return f"http://127.0.0.1:{server[1]}/" if server[1] else "http://127.0.0.1/"

    @staticmethod
    async def _refuse(scope: Scope, send: Send, status: int, code: str, message: str, hint: str) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        body = json.dumps(error_envelope(code, message, hint)).encode("utf-8")
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def _shown(value: str | None) -> str:
    return "(none)" if value is None else json.dumps(value[:100])
