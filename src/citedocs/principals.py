"""Who a request is: tokens made, listed and revoked, and a bearer secret or a single sign-on JWT turned into
the principal every front end checks (`access.current()`). Kept out of the facade (`service.Citedocs`, which
delegates here) because it is one concern with its own rules: an unknown, expired and revoked token are refused
alike, and a sign-in's sources are named as the index names them.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from citedocs import access
from citedocs.errors import AuthRequired, InputError
from citedocs.store import Store
from citedocs.store.tokens import StoredToken, TokenTable

if TYPE_CHECKING:
    from citedocs.oidc import Identity, OidcVerifier

__all__ = ["authenticate", "create_token", "signed_in"]


def create_token(
    store: Store,
    name: str,
    scope: access.Scope,
    source_names: Sequence[str] | None,
    expires_days: float | None = None,
) -> tuple[str, StoredToken]:
    """A new token: the secret (shown once, never stored) and its record. `source_names` (as the index names
    them) limit what it sees; None means every source."""
    access.require("admin")
    if scope not in access.SCOPES:
        raise InputError(f"{scope!r} is not a scope.", "Use search, ask or admin.")
    if expires_days is not None and expires_days <= 0:
        raise InputError("--expires must be a positive number of days.", "Leave it out for no expiry.")
    expires = None if expires_days is None else time.time() + expires_days * 86400
    secret = access.new_secret()
    names = sorted(set(source_names)) if source_names is not None else None
    record = TokenTable(store).add(access.valid_name(name), access.hash_secret(secret), scope, names, expires)
    return secret, record


def authenticate(store: Store, sso: OidcVerifier | None, secret: str) -> access.Principal:
    """The principal a bearer secret stands for; unknown, expired and revoked tokens are refused alike.
    With single sign-on configured, a JWT is verified against the issuer and mapped by its groups."""
    if sso is not None:
        from citedocs.oidc import looks_like_jwt

        if looks_like_jwt(secret):
            return signed_in(store, sso.verify(secret))
    found = (
        TokenTable(store).by_hash(access.hash_secret(secret))
        if secret.startswith(access.TOKEN_PREFIX)
        else None
    )
    if found is None or not found.usable(time.time()):
        raise AuthRequired(
            "The token is not valid here (unknown, expired or revoked).",
            "Send `Authorization: Bearer <token>` with a token from `citedocs token create`.",
        )
    sources = None if found.sources is None else frozenset(found.sources)
    return access.Principal(found.name, found.scope, sources)  # type: ignore[arg-type]


def signed_in(store: Store, identity: Identity) -> access.Principal:
    """A verified sign-in as a principal: its rule's sources (names or folder paths) as source names."""
    if identity.rule.sources is None:
        return access.Principal(identity.name, identity.rule.scope, None)
    names = set()
    for wanted in identity.rule.sources:
        source = store.find_source(wanted) or store.find_source(str(Path(wanted).expanduser().resolve()))
        names.add(wanted if source is None else source.name)  # a source not registered yet sees nothing
    return access.Principal(identity.name, identity.rule.scope, frozenset(names))
