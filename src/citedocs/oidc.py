"""Single sign-on: bearer JWTs from one OIDC issuer, verified with its published keys, mapped to a scope and sources.

The issuer's discovery document (`<issuer>/.well-known/openid-configuration`) names its key set (`jwks_uri`);
both are fetched through the SSRF-guarded client (an issuer on a private address needs
`CITEDOCS_ALLOWED_PRIVATE_HOSTS`) and kept for `JWKS_MAX_AGE_S`. A token whose `kid` is not among the kept keys
(the issuer rotated them) refetches the key set once, at most once per `REFETCH_MIN_S`, so made-up `kid`s cannot
make citedocs hammer the issuer. PyJWT checks the signature (RS256 or ES256, with a key of that type: never
`none`, never HMAC, where a public key could be used as the secret), `iss`, `aud`, `exp` and `nbf`. The user's
groups (the `groups` or `roles` claim) pick the first matching rule of `CITEDOCS_OIDC_GROUPS`.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

import jwt

from citedocs import access
from citedocs.errors import AuthRequired, ConfigError, FetchError, PermissionDenied
from citedocs.sources.fetch import GuardedFetcher
from citedocs.sources.ssrf import is_allowed_host

if TYPE_CHECKING:
    from citedocs.settings import Settings

__all__ = [
    "ALGORITHMS",
    "GROUP_CLAIMS",
    "JWKS_MAX_AGE_S",
    "LEEWAY_S",
    "REFETCH_MIN_S",
    "GroupRule",
    "Identity",
    "OidcVerifier",
    "looks_like_jwt",
    "parse_groups",
]

_log = logging.getLogger(__name__)

ALGORITHMS = {"RS256": "RSA", "ES256": "EC"}  # the only signatures accepted, each with its key type
GROUP_CLAIMS = (
    "groups",
    "roles",
)  # Keycloak (group mapper) and Entra ID put a user's groups or app roles here
NAME_CLAIMS = ("email", "preferred_username", "sub")
LEEWAY_S = 30  # clock skew allowed on exp / nbf / iat
JWKS_MAX_AGE_S = 3600  # keys are refetched after an hour even without an unknown kid
REFETCH_MIN_S = 60  # an unknown kid refetches the key set at most this often
FETCH_MAX_BYTES = 512 * 1024
FETCH_TIMEOUT_S = 10.0
GROUPS_FORMAT = (
    "GROUP=SCOPE[:SOURCE,SOURCE...] entries separated by `;`, e.g. `support=ask:/srv/support;admins=admin`"
)


@dataclass(frozen=True, slots=True)
class GroupRule:
    """One entry of CITEDOCS_OIDC_GROUPS: members of `group` get `scope` on `sources` (None: every source)."""

    group: str
    scope: access.Scope
    sources: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class Identity:
    """A verified sign-in: the name for the audit line and quota (`sso:` + email or subject) and its rule."""

    name: str
    rule: GroupRule


def looks_like_jwt(secret: str) -> bool:
    """Three dot-separated parts and not a citedocs token (whose secret has no dots)."""
    return secret.count(".") == 2 and not secret.startswith(access.TOKEN_PREFIX)


def parse_groups(text: str) -> tuple[GroupRule, ...]:
    """`support=ask:/srv/support,/srv/faq;admins=admin` as rules, in order (the first match wins)."""
    rules: list[GroupRule] = []
    for entry in (part.strip() for part in text.split(";")):
        if not entry:
            continue
        group, _, grant = entry.partition("=")
        scope, limited, sources = grant.partition(":")
        names = tuple(s.strip() for s in sources.split(",") if s.strip())
        if not group.strip() or scope.strip() not in access.SCOPES or (limited and not names):
            raise ConfigError(
                f"CITEDOCS_OIDC_GROUPS has an entry citedocs cannot read: {entry!r}.",
                f"Write {GROUPS_FORMAT}; the scope is search, ask or admin.",
            )
        rules.append(GroupRule(group.strip(), cast(access.Scope, scope.strip()), names or None))
    return tuple(rules)


class OidcVerifier:
    """Verifies one issuer's JWTs; the key set is cached and refetched on rotation (thread-safe)."""

    def __init__(
        self,
        issuer: str,
        audience: str,
        rules: tuple[GroupRule, ...],
        fetcher: Callable[[], GuardedFetcher],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.issuer = issuer
        self.audience = audience
        self.rules = rules
        self._make_fetcher = fetcher
        self._fetcher: GuardedFetcher | None = None
        self._clock = clock
        self._lock = threading.Lock()
        self._jwks_uri: str | None = None
        self._keys: dict[str | None, jwt.PyJWK] = {}
        self._fetched_at = -float("inf")
        self._refetched_at = -float("inf")

    @classmethod
    def from_settings(cls, settings: Settings) -> OidcVerifier:
        issuer, audience = settings.oidc_issuer.strip(), settings.oidc_audience.strip()
        rules = parse_groups(settings.oidc_groups)
        if not audience or not rules:
            raise ConfigError(
                "CITEDOCS_OIDC_ISSUER is set without CITEDOCS_OIDC_AUDIENCE and CITEDOCS_OIDC_GROUPS.",
                "Set the audience (the client ID tokens are issued for) and map groups to scopes "
                f"({GROUPS_FORMAT}); docs/teams.md shows an example.",
            )
        parts = urlsplit(issuer)
        plain_allowed = parts.scheme == "http" and is_allowed_host(
            (parts.hostname or "").lower(), settings.allowed_private_hosts
        )
        if parts.scheme != "https" and not plain_allowed:
            raise ConfigError(
                f"CITEDOCS_OIDC_ISSUER must be an https URL, not {issuer!r}.",
                "Use the issuer URL your identity provider shows (its tokens' `iss`); plain http is accepted "
                "only for a host listed in CITEDOCS_ALLOWED_PRIVATE_HOSTS.",
            )

        def fetcher() -> GuardedFetcher:
            return GuardedFetcher.from_settings(
                settings, max_bytes=FETCH_MAX_BYTES, timeout_s=FETCH_TIMEOUT_S, max_redirects=2
            )

        return cls(issuer, audience, rules, fetcher)

    def verify(self, token: str) -> Identity:
        """The signed-in user and the rule that admits them; AuthRequired for a token that does not verify,
        PermissionDenied for a user none of whose groups is mapped."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise _refused("it is not a well-formed JWT") from exc
        alg = header.get("alg")
        if alg not in ALGORITHMS:
            raise _refused(f"it is signed with {str(alg)[:16]!r}; only RS256 and ES256 are accepted")
        kid = header.get("kid")
        key = self._key(kid if isinstance(kid, str) else None)
        if key.key_type != ALGORITHMS[alg] or key.algorithm_name != alg:
            raise _refused(f"its key {key.key_id!r} is not an {alg} key")
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key.key,
                algorithms=[alg],
                audience=self.audience,
                issuer=self.issuer,
                leeway=LEEWAY_S,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except jwt.ExpiredSignatureError as exc:
            raise _refused("it has expired") from exc
        except jwt.ImmatureSignatureError as exc:
            raise _refused("it is not valid yet (nbf)") from exc
        except jwt.InvalidAudienceError as exc:
            raise _refused("it was issued for another audience (aud)") from exc
        except jwt.InvalidIssuerError as exc:
            raise _refused("it was issued by another issuer (iss)") from exc
        except jwt.PyJWTError as exc:
            raise _refused(f"{exc}".rstrip(".")[:120]) from exc
        return self._identity(claims)

    def _identity(self, claims: Mapping[str, Any]) -> Identity:
        name = next((str(claims[c]) for c in NAME_CLAIMS if isinstance(claims.get(c), str) and claims[c]), "")
        name = "sso:" + "".join(ch for ch in name if ch.isprintable() and not ch.isspace())[:128]
        groups: list[str] = []
        for claim in GROUP_CLAIMS:
            value = claims.get(claim)
            if isinstance(value, str):
                groups.append(value)
            elif isinstance(value, list):
                groups.extend(str(g) for g in value)
        member = set(groups)
        for rule in self.rules:
            if rule.group in member:
                return Identity(name, rule)
        shown = ", ".join(sorted(member)[:5]) + (", ..." if len(member) > 5 else "") if member else "none"
        raise PermissionDenied(
            f"You are signed in as {name[4:]!r}, but none of your groups ({shown}) is given access here.",
            "Ask an administrator to map one of your groups in CITEDOCS_OIDC_GROUPS (docs/teams.md), or to "
            "give you a token (`citedocs token create`).",
        )

    def would_fetch(self, token: str) -> bool:
        """Whether verifying `token` would fetch from the issuer (keys stale, or its kid unknown and a refetch
        allowed): a server verifies such a token off its event loop, and the others inline."""
        now = self._clock()
        if now - self._fetched_at >= JWKS_MAX_AGE_S:
            return True
        try:
            kid = jwt.get_unverified_header(token).get("kid")
        except jwt.PyJWTError:
            return False
        known = self._find(kid if isinstance(kid, str) else None) is not None
        return not known and now - self._refetched_at >= REFETCH_MIN_S

    # -- the issuer's keys ----------------------------------------------------------------------------------
    def _key(self, kid: str | None) -> jwt.PyJWK:
        with self._lock:
            now = self._clock()
            if now - self._fetched_at >= JWKS_MAX_AGE_S:
                self._refresh(now, discover=True)
            found = self._find(kid)
            if found is None and now - self._refetched_at >= REFETCH_MIN_S:  # the issuer may have rotated
                self._refetched_at = now
                self._refresh(now, discover=False)
                found = self._find(kid)
        if found is None:
            raise _refused(
                f"its key ({str(kid)[:40]!r}) is not among the issuer's published keys",
                "Sign in again for a fresh token; if this persists, check that CITEDOCS_OIDC_ISSUER names "
                "the issuer that signs your tokens.",
            )
        return found

    def _find(self, kid: str | None) -> jwt.PyJWK | None:
        if kid is None and len(self._keys) == 1:  # a key set of one key may leave out kids
            return next(iter(self._keys.values()))
        return self._keys.get(kid)

    def _refresh(self, now: float, *, discover: bool) -> None:
        try:
            if discover or self._jwks_uri is None:
                document = self._json(self.issuer.rstrip("/") + "/.well-known/openid-configuration")
                if document.get("issuer") != self.issuer or not isinstance(document.get("jwks_uri"), str):
                    raise ConfigError(
                        f"{self.issuer}'s discovery document names another issuer or no jwks_uri.",
                        "Set CITEDOCS_OIDC_ISSUER to exactly the `issuer` your provider's "
                        "/.well-known/openid-configuration shows.",
                    )
                self._jwks_uri = document["jwks_uri"]
            assert self._jwks_uri is not None
            keys = self._json(self._jwks_uri).get("keys")
        except FetchError:
            if not self._keys:
                raise
            _log.warning("could not refresh %s's keys; using the ones fetched before", self.issuer)
            self._fetched_at = now - JWKS_MAX_AGE_S + REFETCH_MIN_S  # try again in a minute
            return
        usable: dict[str | None, jwt.PyJWK] = {}
        for entry in keys if isinstance(keys, list) else []:
            if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
                continue
            try:
                key = jwt.PyJWK(entry)
            except jwt.PyJWTError:
                continue  # a key type or curve citedocs does not accept
            if key.algorithm_name in ALGORITHMS:
                usable[key.key_id] = key
        self._keys, self._fetched_at = usable, now

    def _json(self, url: str) -> dict[str, Any]:
        if self._fetcher is None:
            self._fetcher = self._make_fetcher()
        result = self._fetcher.fetch(url)
        try:
            data = json.loads(result.content)
        except ValueError as exc:
            raise FetchError(
                f"{url} did not answer with JSON.", "Check CITEDOCS_OIDC_ISSUER: it is the issuer's base URL."
            ) from exc
        if not isinstance(data, dict):
            raise FetchError(f"{url} did not answer with a JSON object.", "Check CITEDOCS_OIDC_ISSUER.")
        return data

    def close(self) -> None:
        if self._fetcher is not None:
            self._fetcher.close()


def _refused(why: str, hint: str = "") -> AuthRequired:
    return AuthRequired(
        f"The sign-in token was refused: {why}.",
        hint
        or "Sign in again with your identity provider and send the new token as `Authorization: Bearer`.",
    )
