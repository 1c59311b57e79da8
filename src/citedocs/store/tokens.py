"""The SQL for access tokens: one row per token, holding the SHA-256 of its secret, never the secret."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from citedocs.errors import NotFoundError, StoreError
from citedocs.store.base import Store

__all__ = ["StoredToken", "TokenTable"]


@dataclass(frozen=True, slots=True)
class StoredToken:
    name: str
    scope: str
    sources: tuple[str, ...] | None
    created: float
    expires: float | None
    revoked: float | None

    def usable(self, now: float) -> bool:
        return self.revoked is None and (self.expires is None or now < self.expires)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "scope": self.scope,
            "sources": None if self.sources is None else list(self.sources),
            "created": self.created,
            "expires": self.expires,
            "revoked": self.revoked,
        }


def _token(row: Any) -> StoredToken:
    sources = None if row["sources"] is None else tuple(json.loads(row["sources"]))
    return StoredToken(row["name"], row["scope"], sources, row["created"], row["expires"], row["revoked"])


class TokenTable:
    """Tokens of one store (either backend): every replica on the same database sees the same rows."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def add(
        self, name: str, secret_hash: str, scope: str, sources: Sequence[str] | None, expires: float | None
    ) -> StoredToken:
        with self.store.transaction() as conn:
            row = conn.execute(
                "INSERT INTO tokens (name, hash, scope, sources, created, expires) VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (name) DO NOTHING RETURNING name",
                (
                    name,
                    secret_hash,
                    scope,
                    None if sources is None else json.dumps(list(sources)),
                    time.time(),
                    expires,
                ),
            ).fetchone()
        if row is None:
            raise StoreError(
                f"A token named {name!r} already exists.",
                f"Pick another name, or revoke it first with `citedocs token revoke {name}`.",
            )
        return self.get(name)

    def get(self, name: str) -> StoredToken:
        row = self.store._conn().execute("SELECT * FROM tokens WHERE name = ?", (name,)).fetchone()
        if row is None:
            raise NotFoundError(
                f"No token is named {name!r}.", "Run `citedocs token list` to see the tokens."
            )
        return _token(row)

    def by_hash(self, secret_hash: str) -> StoredToken | None:
        row = self.store._conn().execute("SELECT * FROM tokens WHERE hash = ?", (secret_hash,)).fetchone()
        return None if row is None else _token(row)

    def list(self) -> list[StoredToken]:
        rows = self.store._conn().execute("SELECT * FROM tokens ORDER BY name").fetchall()
        return [_token(r) for r in rows]

    def revoke(self, name: str) -> StoredToken:
        self.get(name)
        with self.store.transaction() as conn:
            conn.execute(
                "UPDATE tokens SET revoked = ? WHERE name = ? AND revoked IS NULL", (time.time(), name)
            )
        return self.get(name)
