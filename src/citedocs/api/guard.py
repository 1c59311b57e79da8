"""One Host/Origin check in front of every route, against DNS rebinding.

A page on evil.example whose name is re-pointed at 127.0.0.1 reaches this server with `Host: evil.example`
and its own Origin; a browser can forge neither. So a request is served only when its Host is a loopback name
or a configured one (`CITEDOCS_MCP_ALLOWED_HOSTS`), and its Origin, when present, is one of those hosts over
http or https. Patterns are the MCP SDK's (`transport_security`): exact, or `name:*` for any port.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from starlette.types import ASGIApp, Receive, Scope, Send

from citedocs.api.limits import error_envelope

__all__ = ["LOOPBACK_NAMES", "HostGuard", "allowed_hosts", "allowed_origins", "matches"]

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
SETTING = "CITEDOCS_MCP_ALLOWED_HOSTS"
_WITH_PORT = re.compile(r"(?:^[^:\[\]]+|\])(:\d+)$")


def allowed_hosts(extra: Sequence[str] = ()) -> list[str]:
    """Loopback names and `extra` ones, each with any port or none (a name given with a port keeps it)."""
    hosts: list[str] = []
    for name in (*LOOPBACK_NAMES, *extra):
        hosts.append(name.lower())
        if not _WITH_PORT.search(name):
            hosts.append(f"{name.lower()}:*")
    return hosts


def allowed_origins(hosts: Sequence[str]) -> list[str]:
    return [f"{scheme}://{host}" for host in hosts for scheme in ("http", "https")]


def matches(value: str, patterns: Sequence[str]) -> bool:
    value = value.lower()
    for pattern in patterns:
        if value == pattern:
            return True
        if pattern.endswith(":*") and value.startswith(pattern[:-1]) and value[len(pattern) - 1 :].isdigit():
            return True
    return False


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
            await self._refuse(scope, send, 421, "host_not_allowed",
                               f"This server does not answer to the name {_shown(host)}.",
                               f"Open it as {self._home(scope)}; to serve it under another name, add that "
                               f"name to {SETTING} (comma-separated, e.g. docs.internal or "
                               "docs.internal:443).")  # fmt: skip
        elif origin is not None and not matches(origin, self.origins):
            await self._refuse(scope, send, 403, "origin_not_allowed",
                               f"Requests from pages at {_shown(origin)} are not allowed.",
                               f"Use the citedocs page itself ({self._home(scope)}); to let pages of "
                               f"another name call it, add that name to {SETTING}.")  # fmt: skip
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
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode())]})  # fmt: skip
        await send({"type": "http.response.body", "body": body})


def _shown(value: str | None) -> str:
    return "(none)" if value is None else json.dumps(value[:100])
