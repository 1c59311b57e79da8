"""Who is asking: the principal of a request on a shared server, its scope and the sources it may see.

Tokens are random 256-bit secrets; only their SHA-256 is stored (a fast hash is enough for a secret with that
much entropy: there is nothing to guess). A front end that authenticated a request runs the library call
inside `acting_as(principal)`; the library (`Citedocs`) reads `current()` where it searches and reads, so a
front end cannot forget to filter sources. Local use, with auth off, runs as `OWNER`.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import re
import secrets
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from citedocs.errors import InputError, PermissionDenied

__all__ = [
    "ANONYMOUS",
    "OWNER",
    "SCOPES",
    "TOKEN_PREFIX",
    "Principal",
    "Scope",
    "acting_as",
    "auditing",
    "current",
    "hash_secret",
    "new_secret",
    "note",
    "require",
    "valid_name",
]

Scope = Literal["search", "ask", "admin"]
SCOPES: tuple[Scope, ...] = ("search", "ask", "admin")  # each grants everything the ones before it do
TOKEN_PREFIX = "cdt_"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@dataclass(frozen=True, slots=True)
class Principal:
    """A token's holder as the library sees it: `sources` None means every source."""

    name: str
    scope: Scope
    sources: frozenset[str] | None = None

    def allows(self, scope: Scope) -> bool:
        return SCOPES.index(self.scope) >= SCOPES.index(scope)

    def sees(self, source_name: str) -> bool:
        return self.sources is None or source_name in self.sources


OWNER = Principal("owner", "admin", None)
ANONYMOUS = Principal("anonymous", "search", frozenset())  # a request without a token sees no source
_current: contextvars.ContextVar[Principal] = contextvars.ContextVar("citedocs_principal", default=OWNER)
_audit: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("citedocs_audit", default=None)


def current() -> Principal:
    """The principal the running request acts as (`OWNER` outside any request)."""
    return _current.get()


@contextlib.contextmanager
def acting_as(principal: Principal) -> Iterator[Principal]:
    token = _current.set(principal)
    try:
        yield principal
    finally:
        _current.reset(token)


@contextlib.contextmanager
def auditing() -> Iterator[dict[str, Any]]:
    """What the library reports of this request for its audit line: `sources` that answered, `query_chars`."""
    record: dict[str, Any] = {"sources": set(), "query_chars": 0}
    token = _audit.set(record)
    try:
        yield record
    finally:
        _audit.reset(token)


def note(query: str | None = None, sources: Iterable[str] = ()) -> None:
    """Tell the request's audit line (if one is being written) the query's length and the sources returned."""
    record = _audit.get()
    if record is not None:
        if query is not None:
            record["query_chars"] = max(record["query_chars"], len(query))
        record["sources"].update(sources)


def require(scope: Scope, principal: Principal | None = None) -> Principal:
    """The principal, if its scope covers `scope`; else a refusal that names the scope needed."""
    who = principal or current()
    if not who.allows(scope):
        raise PermissionDenied(
            f"The token {who.name!r} may {_verbs(who.scope)}, not {_verbs(scope, only=True)}.",
            f"Ask an administrator for a token with scope {scope} (`citedocs token create NAME --scope {scope}`).",
        )
    return who


def _verbs(scope: Scope, only: bool = False) -> str:
    words = {"search": "search and read", "ask": "ask questions", "admin": "change folders, sites and tokens"}
    if only:
        return words[scope]
    return ", ".join(words[s] for s in SCOPES[: SCOPES.index(scope) + 1])


def new_secret() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def valid_name(name: str) -> str:
    if not _NAME.match(name):
        raise InputError(
            f"{name!r} is not a usable token name.",
            "Use 1-64 letters, digits, dots, dashes or underscores, starting with a letter or digit.",
        )
    return name
