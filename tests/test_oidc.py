"""Single sign-on as a team would use it: a real issuer (an HTTP server publishing its discovery document and key
set, keys made with `cryptography`, tokens signed with PyJWT) and the real `citedocs serve --auth tokens`."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import os
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from citedocs import access
from citedocs.errors import ConfigError, UnsafeURLError
from citedocs.oidc import OidcVerifier, parse_groups
from citedocs.settings import Settings
from test_auth import ALPHA, BRAVO, _cli, serving

AUDIENCE = "citedocs-team"


class Issuer:
    """An OIDC issuer on 127.0.0.1: /.well-known/openid-configuration and /jwks, each request counted."""

    def __init__(self) -> None:
        self.keys: dict[str, Any] = {}  # kid -> private key
        self.published: list[str] = []
        self.hits: Counter[str] = Counter()
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                issuer.hits[self.path] += 1
                if self.path == "/.well-known/openid-configuration":
                    body: dict[str, Any] = {"issuer": issuer.url, "jwks_uri": f"{issuer.url}/jwks"}
                elif self.path == "/jwks":
                    body = {"keys": [issuer.public_jwk(kid) for kid in issuer.published]}
                else:
                    self.send_error(404)
                    return
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def new_key(self, kid: str, kind: str = "RSA", publish: bool = True) -> None:
        self.keys[kid] = (
            rsa.generate_private_key(public_exponent=65537, key_size=2048)
            if kind == "RSA"
            else ec.generate_private_key(ec.SECP256R1())
        )
        if publish:
            self.published.append(kid)

    def public_jwk(self, kid: str) -> dict[str, Any]:
        key = self.keys[kid]
        maker = RSAAlgorithm if isinstance(key, rsa.RSAPrivateKey) else ECAlgorithm
        jwk = json.loads(maker.to_jwk(key.public_key()))
        return {**jwk, "kid": kid, "use": "sig", "alg": "RS256" if maker is RSAAlgorithm else "ES256"}

    def token(self, kid: str, groups: list[str], **claims: Any) -> str:
        key = self.keys[kid]
        now = int(time.time())
        payload = {
            "iss": self.url,
            "aud": AUDIENCE,
            "sub": "u-1",
            "email": "alice@example.com",
            "groups": groups,
            "iat": now,
            "exp": now + 300,
            **claims,
        }
        alg = "RS256" if isinstance(key, rsa.RSAPrivateKey) else "ES256"
        return jwt.encode(payload, key, algorithm=alg, headers={"kid": kid})

    def jwks_fetches(self) -> int:
        return self.hits["/jwks"]

    def __enter__(self) -> Issuer:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def team(tmp_path: Path) -> dict[str, Any]:
    """Two folders (alpha, bravo) in one index, as in test_auth."""
    alpha, bravo = tmp_path / "alpha", tmp_path / "bravo"
    for folder, text in ((alpha, ALPHA), (bravo, BRAVO)):
        folder.mkdir()
        (folder / "doc.md").write_text(text, encoding="utf-8")
    env = {**os.environ, "CITEDOCS_DB": str(tmp_path / "index.sqlite3"), "CITEDOCS_EMBEDDER": "none"}
    for folder in (alpha, bravo):
        assert _cli(env, "add", str(folder)).returncode == 0
    return {"env": env, "alpha": alpha, "bravo": bravo, "tmp": tmp_path}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _forged_hs256(issuer: Issuer, kid: str) -> str:
    """The classic confusion attack: HMAC-signed with the issuer's *public* key as the secret (PyJWT refuses
    to make one, so it is put together by hand)."""
    public = (
        issuer.keys[kid]
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    header = _b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": kid}).encode())
    now = int(time.time())
    body = _b64(
        json.dumps(
            {"iss": issuer.url, "aud": AUDIENCE, "sub": "mallory", "groups": ["admins"], "exp": now + 300}
        ).encode()
    )
    signature = hmac.new(public, f"{header}.{body}".encode(), hashlib.sha256).digest()
    return f"{header}.{body}.{_b64(signature)}"


def _unsigned(issuer: Issuer, kid: str) -> str:
    header = _b64(json.dumps({"alg": "none", "typ": "JWT", "kid": kid}).encode())
    body = _b64(
        json.dumps(
            {
                "iss": issuer.url,
                "aud": AUDIENCE,
                "sub": "mallory",
                "groups": ["admins"],
                "exp": int(time.time()) + 300,
            }
        ).encode()
    )
    return f"{header}.{body}."


@contextlib.contextmanager
def sso_server(team: dict[str, Any], issuer: Issuer, **extra: str) -> Iterator[str]:
    env = {
        **team["env"],
        "CITEDOCS_AUTH": "tokens",
        "CITEDOCS_OIDC_ISSUER": issuer.url,
        "CITEDOCS_OIDC_AUDIENCE": AUDIENCE,
        "CITEDOCS_ALLOWED_PRIVATE_HOSTS": "127.0.0.1",
        "CITEDOCS_OIDC_GROUPS": f"support=ask:{team['alpha']};admins=admin",
        **extra,
    }
    with serving(env, team["tmp"] / "serve.log") as url:
        yield url


def _search(url: str, token: str, query: str) -> httpx.Response:
    return httpx.post(f"{url}/search", json={"query": query}, headers={"Authorization": f"Bearer {token}"})


def test_a_signed_in_group_member_sees_only_the_groups_folder_and_forged_tokens_are_refused(
    team: dict[str, Any],
) -> None:
    with Issuer() as issuer:
        issuer.new_key("k1")
        issuer.new_key("e1", kind="EC")
        support = issuer.token("k1", ["staff", "support"])
        with sso_server(team, issuer) as url:
            own = _search(url, support, "cobalt gateway keys")
            assert own.status_code == 200, own.text
            assert own.json()["hits"] and all("alpha" in h["path"] for h in own.json()["hits"])
            other = _search(url, support, "vermilion contract renews")
            assert other.status_code == 200 and other.json()["hits"] == [] and "penalty" not in other.text
            read = httpx.get(
                f"{url}/read",
                params={"path": str(team["bravo"] / "doc.md")},
                headers={"Authorization": f"Bearer {support}"},
            )
            assert read.status_code in (403, 404) and "penalty" not in read.text
            add = httpx.post(
                f"{url}/sources",
                json={"path": str(team["tmp"])},
                headers={"Authorization": f"Bearer {support}"},
            )
            assert add.status_code == 403 and "admin" in add.json()["error"]["hint"]
            assert _search(url, issuer.token("e1", ["admins"]), "contract").json()[
                "hits"
            ]  # ES256, every source

            outsider = _search(url, issuer.token("k1", ["marketing"]), "gateway")
            assert outsider.status_code == 403
            assert "CITEDOCS_OIDC_GROUPS" in outsider.json()["error"]["hint"]

            refused = {
                "expired": issuer.token("k1", ["support"], exp=int(time.time()) - 600),
                "another audience": issuer.token("k1", ["support"], aud="someone-else"),
                "another issuer": issuer.token("k1", ["support"], iss="https://evil.example"),
                "RS256 and ES256": _unsigned(issuer, "k1"),
                "RS256 and ES256 ": _forged_hs256(issuer, "k1"),
            }
            for why, token in refused.items():
                answer = _search(url, token, "gateway")
                assert answer.status_code == 401, (why, answer.text)
                assert why.strip() in answer.json()["error"]["message"]
                assert "resource_metadata=" in answer.headers["www-authenticate"]

            metadata = httpx.get(f"{url}/.well-known/oauth-protected-resource").json()
            assert metadata["authorization_servers"] == [issuer.url]

            async def mcp_search() -> Any:
                from mcp.client import Client
                from mcp.client.streamable_http import streamable_http_client
                from mcp.shared._httpx_utils import create_mcp_http_client

                client = create_mcp_http_client(headers={"Authorization": f"Bearer {support}"})
                async with Client(streamable_http_client(f"{url}/mcp", http_client=client)) as mcp:
                    return await mcp.call_tool("search", {"query": "vermilion contract renews"})

            found = anyio.run(mcp_search)
            assert found.structured_content["hits"] == [] and "penalty" not in str(found.content)

            # the key set was fetched once and is served from memory since
            assert issuer.hits["/.well-known/openid-configuration"] == 1 and issuer.jwks_fetches() == 1

            # the issuer rotates: its new key is found by one refetch, then made-up kids fetch nothing
            issuer.new_key("k2", publish=False)
            issuer.published = ["k2", "e1"]
            assert _search(url, issuer.token("k2", ["support"]), "gateway").status_code == 200
            assert issuer.jwks_fetches() == 2
            issuer.new_key("stranger", publish=False)
            unknown = _search(url, issuer.token("stranger", ["admins"]), "gateway")
            assert unknown.status_code == 401 and "published keys" in unknown.json()["error"]["message"]
            assert _search(url, support, "gateway").status_code == 401  # k1 was withdrawn
            assert issuer.jwks_fetches() == 2  # at most one refetch a minute
        logged = (team["tmp"] / "serve.log").read_text()
        assert "token=sso:alice@example.com POST /search status=200" in logged
        assert support not in logged and "penalty" not in logged


# -- the rules, without a server ------------------------------------------------------------------------------


def test_an_issuer_on_a_private_address_is_refused_unless_allowed(tmp_path: Path) -> None:
    with Issuer() as issuer:
        issuer.new_key("k1")
        settings = Settings(
            db=str(tmp_path / "i.sqlite3"),
            embedder="none",
            auth="tokens",
            oidc_issuer=issuer.url.replace("http:", "https:"),
            oidc_audience=AUDIENCE,
            oidc_groups="support=ask",
        )
        verifier = OidcVerifier.from_settings(settings)
        with pytest.raises(UnsafeURLError, match="CITEDOCS_ALLOWED_PRIVATE_HOSTS"):
            verifier.verify(issuer.token("k1", ["support"]))
        assert issuer.hits == Counter()  # refused before connecting
        with pytest.raises(ConfigError, match="https"):  # plain http only for an allowed host
            OidcVerifier.from_settings(settings.model_copy(update={"oidc_issuer": issuer.url}))
        allowed = settings.model_copy(
            update={"oidc_issuer": issuer.url, "allowed_private_hosts": ["127.0.0.1"]}
        )
        verifier = OidcVerifier.from_settings(allowed)
        token = issuer.token("k1", ["support"])
        assert verifier.would_fetch(token)  # a server verifies this one off its event loop
        identity = verifier.verify(token)
        assert identity.name == "sso:alice@example.com" and identity.rule.scope == "ask"
        assert not verifier.would_fetch(token) and issuer.jwks_fetches() == 1  # cached: verified inline
        issuer.new_key("k2", publish=False)
        assert verifier.would_fetch(issuer.token("k2", ["support"]))  # an unknown kid may refetch once
        verifier.close()


def test_the_group_mapping_reads_scopes_and_sources_in_order_and_refuses_what_it_cannot_read() -> None:
    rules = parse_groups(" support = ask:/srv/support, /srv/faq ; admins=admin;")
    assert [(r.group, r.scope, r.sources) for r in rules] == [
        ("support", "ask", ("/srv/support", "/srv/faq")),
        ("admins", "admin", None),
    ]
    for bad in ("support", "support=root", "=ask", "support=ask:"):
        with pytest.raises(ConfigError, match="GROUP=SCOPE"):
            parse_groups(bad)
    assert set(access.SCOPES) >= {r.scope for r in rules}
