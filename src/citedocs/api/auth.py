"""Tokens on every route of a shared server: who is asking, what they may do, one audit line per request.

With `CITEDOCS_AUTH=tokens`, a request carries `Authorization: Bearer <token>` (agents, scripts, MCP clients) or
the page's session cookie (set once by `POST /auth/session`, HttpOnly and SameSite=Strict, so no other site
can send it). The token's principal is set for the rest of the request (`access.acting_as`): the library
filters sources itself, so no route can forget to. No token, or a bad one, is 401 with the `WWW-Authenticate`
header MCP clients follow to the protected-resource metadata (RFC 9728); a scope the token lacks is 403.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from citedocs import access
from citedocs.api.errors import status_for
from citedocs.api.limits import error_envelope
from citedocs.errors import AuthRequired, CitedocsError, RateLimited
from citedocs.oidc import looks_like_jwt

__all__ = [
    "COOKIE",
    "METADATA_PATH",
    "AnswerQuota",
    "TokenAuth",
    "audit_to_stderr",
    "protected_resource",
    "required_scope",
]

audit = logging.getLogger("citedocs.audit")

COOKIE = "citedocs_session"
METADATA_PATH = "/.well-known/oauth-protected-resource"
PUBLIC = ("/healthz", "/static/", "/help/", "/docs/", "/auth/session", METADATA_PATH, "/favicon.ico")
PUBLIC_PAGES = ("/", "/docs", "/docs/oauth2-redirect", "/openapi.json")
ADMIN_POSTS = ("/sources", "/sites", "/sources/remove", "/sources/reindex")


def required_scope(method: str, path: str) -> access.Scope | None:
    """The scope a route needs; None for what anyone may load (the page shell, health, the sign-in route).
    MCP tools are checked one by one when called (`mcp/boundary.py`): reaching /mcp needs `search`."""
    if path in PUBLIC_PAGES or path.startswith(PUBLIC):
        return None
    if method == "POST" and path == "/ask":
        return "ask"
    if method not in ("GET", "HEAD", "OPTIONS") and path.rstrip("/") in ADMIN_POSTS:
        return "admin"
    return "search"


def protected_resource(base_url: str, issuer: str = "") -> dict[str, Any]:
    """RFC 9728 metadata: what this resource is and how to present a token; the authorization server is the
    single sign-on issuer if one is configured (tokens from `citedocs token create` need none)."""
    return {
        "resource": f"{base_url}/mcp",
        "authorization_servers": [issuer] if issuer else [],
        "bearer_methods_supported": ["header"],
        "scopes_supported": list(access.SCOPES),
        "resource_documentation": f"{base_url}/help/teams",
    }


class AnswerQuota:
    """At most `per_minute` answers per token in any 60 s; the next one learns when to come back."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_minute = per_minute
        self._clock = clock
        self._taken: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def take(self, principal: access.Principal) -> None:
        if self.per_minute <= 0 or principal is access.OWNER:
            return
        now = self._clock()
        with self._lock:
            window = self._taken.setdefault(principal.name, deque())
            while window and now - window[0] >= 60:
                window.popleft()
            if len(window) >= self.per_minute:
                wait = max(1, int(60 - (now - window[0])) + 1)
                raise RateLimited(
                    f"The token {principal.name!r} asked for {self.per_minute} answers in the last minute.",
                    f"Try again in {wait} s (see the Retry-After header).",
                    retry_after_s=wait,
                )
            window.append(now)


class TokenAuth:
    """ASGI middleware: the principal of each request, its scope checked, the request audited."""

    def __init__(
        self,
        app: ASGIApp,
        authenticate: Callable[[str], access.Principal],
        quota: AnswerQuota,
        fetches: Callable[[str], bool] | None = None,
    ) -> None:
        """`fetches(secret)`: whether authenticating it would reach the network (a single sign-on JWT whose
        issuer keys are not cached); such a secret is checked in a worker thread, not on the event loop."""
        self.app = app
        self.authenticate = authenticate
        self.quota = quota
        self.fetches = fetches

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        method, path = scope["method"], scope["path"]
        needed = required_scope(method, path)
        secret = _presented(scope)
        record: dict[str, Any] = {"token": None, "status": 0}
        try:
            principal: access.Principal | None
            if secret and self.fetches is not None and looks_like_jwt(secret) and self.fetches(secret):
                principal = await anyio.to_thread.run_sync(self.authenticate, secret)
            else:
                principal = self.authenticate(secret) if secret else None
            if principal is None and needed is not None:
                raise AuthRequired(
                    "This server needs a token.",
                    "Send `Authorization: Bearer <token>` with a token from `citedocs token create`; in the "
                    "page, paste it when asked.",
                )
            if principal is not None:
                record["token"] = principal.name
                if needed is not None:
                    access.require(needed, principal)
                if needed == "ask":
                    self.quota.take(principal)
        except CitedocsError as exc:
            await _refuse(scope, send, exc, record)
            _audit(method, path, record, started)
            return
        scope.setdefault("state", {}).update({"citedocs.principal": principal, "citedocs.quota": self.quota})

        async def recording_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                record["status"] = message["status"]
            await send(message)

        with access.acting_as(principal or access.ANONYMOUS) as who, access.auditing() as seen:
            try:
                await self.app(scope, receive, recording_send)
            finally:
                record["sources"] = sorted(seen["sources"])
                record["query_chars"] = seen["query_chars"]
                if who is not access.ANONYMOUS or record["status"] >= 400:
                    _audit(method, path, record, started)


def audit_to_stderr() -> None:
    """The audit lines go to the server's stderr (where `serve` logs), whatever the root logger's level."""
    if not audit.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s audit %(message)s"))
        audit.addHandler(handler)
        audit.setLevel(logging.INFO)
        audit.propagate = False


def _presented(scope: Scope) -> str | None:
    """The bearer token, else the page's session cookie; never logged."""
    cookie: str | None = None
    headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
    for name, value in headers:
        if name == b"authorization":
            kind, _, token = value.decode("latin-1").partition(" ")
            if kind.lower() == "bearer" and token.strip():
                return token.strip()
        elif name == b"cookie":
            for part in value.decode("latin-1").split(";"):
                key, _, val = part.strip().partition("=")
                if key == COOKIE and val:
                    cookie = val
    return cookie


async def _refuse(scope: Scope, send: Send, exc: CitedocsError, record: dict[str, Any]) -> None:
    status, code = status_for(exc)
    record["status"] = status
    headers = [(b"content-type", b"application/json")]
    if status == 401:
        base = _base_url(scope)
        challenge = f'Bearer realm="citedocs", resource_metadata="{base}{METADATA_PATH}"'
        headers.append((b"www-authenticate", challenge.encode("latin-1")))
    if isinstance(exc, RateLimited):
        headers.append((b"retry-after", str(exc.retry_after_s).encode()))
    body = json.dumps(error_envelope(code, exc.message, exc.hint)).encode("utf-8")
    headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _base_url(scope: Scope) -> str:
    host = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"host"), "127.0.0.1")
    return f"{scope.get('scheme', 'http')}://{host}"


def _audit(method: str, path: str, record: dict[str, Any], started: float) -> None:
    """One line per request: who, what, how big, which sources answered; never a token or document text."""
    audit.info(
        "token=%s %s %s status=%s query_chars=%d sources=%s ms=%.1f",
        record["token"] or "-",
        method,
        path,
        record["status"],
        record.get("query_chars", 0),
        ",".join(record.get("sources", [])) or "-",
        (time.perf_counter() - started) * 1000,
    )
