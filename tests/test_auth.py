"""A shared server with tokens, tried as its users and an outsider would: through the real `citedocs serve`
process, its HTTP routes and a real MCP client with a bearer header, tokens made by the real CLI."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from citedocs import access
from citedocs.api.auth import AnswerQuota, required_scope
from citedocs.errors import AuthRequired, NotFoundError, PermissionDenied, RateLimited
from citedocs.service import Citedocs
from citedocs.settings import Settings
from fakes.openai_server import FakeOpenAI, Reply

ALPHA = "# Gateway\n\nThe cobalt gateway rotates its signing keys every nine days.\n"
BRAVO = "# Contract\n\nThe vermilion contract renews every March with a penalty clause.\n"


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "citedocs", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


@pytest.fixture
def team(tmp_path: Path) -> dict[str, Any]:
    """Two folders (alpha, bravo) in one index, and tokens made by the CLI."""
    alpha, bravo = tmp_path / "alpha", tmp_path / "bravo"
    alpha.mkdir()
    bravo.mkdir()
    (alpha / "gateway.md").write_text(ALPHA, encoding="utf-8")
    (bravo / "contract.md").write_text(BRAVO, encoding="utf-8")
    env = {**os.environ, "CITEDOCS_DB": str(tmp_path / "index.sqlite3"), "CITEDOCS_EMBEDDER": "none"}
    for folder in (alpha, bravo):
        assert _cli(env, "add", str(folder)).returncode == 0
    tokens = {}
    for name, scope, source in [
        ("alpha-asker", "ask", str(alpha)),
        ("searcher", "search", None),
        ("boss", "admin", None),
    ]:
        args = ["token", "create", name, "--scope", scope, "--json"] + (
            ["--source", source] if source else []
        )
        made = _cli(env, *args)
        assert made.returncode == 0, made.stderr
        tokens[name] = json.loads(made.stdout)["token"]
    return {"env": env, "alpha": alpha, "bravo": bravo, "tokens": tokens, "tmp": tmp_path}


@contextlib.contextmanager
def serving(env: dict[str, str], log: Path, *args: str) -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "citedocs", "serve", "--port", "0", *args],
        env=env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 90
        url = ""
        while not url:
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            if match := re.search(r"serving (http://\S+?)/ ", log.read_text()):
                url = match.group(1)
            time.sleep(0.1)
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_no_token_is_401_with_the_way_to_a_token_and_the_metadata_mcp_clients_follow(
    team: dict[str, Any],
) -> None:
    env = {**team["env"], "CITEDOCS_AUTH": "tokens"}
    with serving(env, team["tmp"] / "serve.log") as url:
        refused = httpx.post(f"{url}/search", json={"query": "gateway"})
        assert refused.status_code == 401
        assert "citedocs token create" in refused.json()["error"]["hint"]
        challenge = refused.headers["www-authenticate"]
        assert challenge.startswith("Bearer ") and "resource_metadata=" in challenge
        metadata_url = re.search(r'resource_metadata="([^"]+)"', challenge).group(1)  # type: ignore[union-attr]
        metadata = httpx.get(metadata_url).json()
        assert metadata["resource"].endswith("/mcp") and "ask" in metadata["scopes_supported"]
        assert httpx.post(f"{url}/mcp/", json={}).status_code == 401
        bad = httpx.post(f"{url}/search", json={"query": "gateway"}, headers=_bearer("cdt_not-a-real-token"))
        assert bad.status_code == 401
        assert httpx.get(f"{url}/healthz").status_code == 200  # load balancers need no token
        assert httpx.get(f"{url}/").status_code == 200  # the page shell, which then asks for a token


def test_a_token_limited_to_a_folder_never_sees_another_folders_passages(team: dict[str, Any]) -> None:
    """The token may read folder alpha only; the question only bravo answers is refused, and nothing of
    bravo reaches the response, the model's prompt or the server's log."""
    reply = Reply(tokens=["The cobalt gateway rotates its keys every nine days [1]."])
    with FakeOpenAI(default=reply) as llm:
        env = {**team["env"], "CITEDOCS_AUTH": "tokens", "CITEDOCS_LLM_BASE_URL": llm.base_url}
        log = team["tmp"] / "serve.log"
        with serving(env, log) as url:
            token = _bearer(team["tokens"]["alpha-asker"])
            own = httpx.post(f"{url}/search", json={"query": "cobalt gateway keys"}, headers=token).json()
            assert own["hits"] and all("alpha" in h["path"] for h in own["hits"])
            other = httpx.post(f"{url}/search", json={"query": "vermilion contract renews"}, headers=token)
            assert other.status_code == 200 and other.json()["hits"] == []
            named = httpx.post(
                f"{url}/search", json={"query": "contract", "source": str(team["bravo"])}, headers=token
            )
            assert named.status_code == 404  # the same answer as for a folder that does not exist
            asked = httpx.post(
                f"{url}/ask?stream=false",
                json={"question": "When does the vermilion contract renew?"},
                headers=token,
                timeout=60,
            )
            read = httpx.get(
                f"{url}/read", params={"path": str(team["bravo"] / "contract.md")}, headers=token
            )
            assert read.status_code in (403, 404)
            status = httpx.get(f"{url}/status", headers=token)
            assert status.status_code == 200
            answered = httpx.post(
                f"{url}/ask?stream=false",
                json={"question": "How often does the cobalt gateway rotate its keys?"},
                headers=token,
                timeout=60,
            )
            assert answered.status_code == 200, answered.text
        # "penalty" is in bravo's text only (the questions name the contract, so its name may be echoed back)
        for body in (other.text, named.text, asked.text, read.text, status.text, answered.text):
            assert "penalty" not in body
        for body in (other.text, asked.text, status.text, answered.text):
            assert "contract.md" not in body and str(team["bravo"]) not in body
        prompts = " ".join(r.raw_body.decode() for r in llm.requests)
        assert "cobalt" in prompts and "penalty" not in prompts
        logged = log.read_text()
        assert "token=alpha-asker POST /search status=200" in logged
        assert "penalty" not in logged and "contract.md" not in logged
        assert team["tokens"]["alpha-asker"] not in logged  # the secret is never logged


def test_scopes_are_enforced_with_403_that_names_the_scope_needed(team: dict[str, Any]) -> None:
    env = {**team["env"], "CITEDOCS_AUTH": "tokens"}
    with serving(env, team["tmp"] / "serve.log") as url:
        searcher = _bearer(team["tokens"]["searcher"])
        assert httpx.post(f"{url}/search", json={"query": "gateway"}, headers=searcher).status_code == 200
        denied = httpx.post(f"{url}/ask", json={"question": "What rotates?"}, headers=searcher)
        assert denied.status_code == 403 and "--scope ask" in denied.json()["error"]["hint"]
        asker = _bearer(team["tokens"]["alpha-asker"])
        add = httpx.post(f"{url}/sources", json={"path": str(team["tmp"])}, headers=asker)
        assert add.status_code == 403 and "admin" in add.json()["error"]["hint"]
        boss = _bearer(team["tokens"]["boss"])
        listed = httpx.get(f"{url}/sources", headers=boss).text
        assert "alpha" in listed and "bravo" in listed


def test_the_page_signs_in_once_with_a_strict_http_only_cookie(team: dict[str, Any]) -> None:
    env = {**team["env"], "CITEDOCS_AUTH": "tokens"}
    with serving(env, team["tmp"] / "serve.log") as url:
        assert httpx.post(f"{url}/auth/session", json={"token": "cdt_wrong"}).status_code == 401
        signed = httpx.post(f"{url}/auth/session", json={"token": team["tokens"]["searcher"]})
        assert signed.status_code == 200
        cookie = signed.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie
        with httpx.Client(cookies=signed.cookies) as browser:
            assert browser.post(f"{url}/search", json={"query": "gateway"}).status_code == 200
            foreign = browser.post(
                f"{url}/search", json={"query": "gateway"}, headers={"Origin": "http://evil.example"}
            )
            assert foreign.status_code == 403  # a page elsewhere cannot use the session


def test_revoking_a_token_stops_it_at_the_next_request(team: dict[str, Any]) -> None:
    env = {**team["env"], "CITEDOCS_AUTH": "tokens"}
    with serving(env, team["tmp"] / "serve.log") as url:
        searcher = _bearer(team["tokens"]["searcher"])
        assert httpx.post(f"{url}/search", json={"query": "gateway"}, headers=searcher).status_code == 200
        assert _cli(team["env"], "token", "revoke", "searcher").returncode == 0
        assert httpx.post(f"{url}/search", json={"query": "gateway"}, headers=searcher).status_code == 401
    listed = _cli(team["env"], "token", "list", "--json")
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert rows["searcher"]["revoked"] is not None
    assert not any(secret in listed.stdout for secret in team["tokens"].values())


def test_answers_are_rate_limited_per_token_with_retry_after(team: dict[str, Any]) -> None:
    with FakeOpenAI(default=Reply(tokens=["The cobalt gateway rotates every nine days [1]."])) as llm:
        env = {
            **team["env"],
            "CITEDOCS_AUTH": "tokens",
            "CITEDOCS_LLM_BASE_URL": llm.base_url,
            "CITEDOCS_AUTH_ANSWERS_PER_MINUTE": "2",
        }
        with serving(env, team["tmp"] / "serve.log") as url:
            asker = _bearer(team["tokens"]["alpha-asker"])
            question = {"question": "How often does the cobalt gateway rotate its keys?"}
            codes = [
                httpx.post(f"{url}/ask?stream=false", json=question, headers=asker, timeout=60)
                for _ in range(3)
            ]
            assert [r.status_code for r in codes[:2]] == [200, 200]
            assert codes[2].status_code == 429 and int(codes[2].headers["retry-after"]) >= 1
            boss = _bearer(team["tokens"]["boss"])  # another token has its own allowance
            assert (
                httpx.post(f"{url}/ask?stream=false", json=question, headers=boss, timeout=60).status_code
                == 200
            )


def test_mcp_over_http_with_a_bearer_header_sees_only_its_sources(team: dict[str, Any]) -> None:
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    env = {**team["env"], "CITEDOCS_AUTH": "tokens"}

    async def session(url: str, token: str) -> tuple[Any, Any, Any]:
        transport = streamable_http_client(
            f"{url}/mcp", http_client=create_mcp_http_client(headers=_bearer(token))
        )
        async with Client(transport) as client:
            found = await client.call_tool("search", {"query": "vermilion contract renews"})
            own = await client.call_tool("search", {"query": "cobalt gateway"})
            add = await client.call_tool("add_folder", {"path": str(team["tmp"])})
            offered = {tool.name for tool in (await client.list_tools()).tools}
            return found, own, add, offered

    with serving(env, team["tmp"] / "serve.log") as url:
        found, own, add, offered = anyio.run(session, url, team["tokens"]["alpha-asker"])
    # an ask token is offered search and ask, not the tools that change folders
    assert {"search", "read_file"} <= offered and not offered & {
        "add_folder",
        "remove_folder",
        "add_doc_source",
    }
    assert found.structured_content["hits"] == [] and "penalty" not in str(found.content)
    assert "cobalt" in json.dumps(own.structured_content)
    assert add.is_error and "admin" in add.content[0].text


def test_binding_beyond_loopback_without_auth_refuses_with_the_two_ways_out(tmp_path: Path) -> None:
    env = {**os.environ, "CITEDOCS_DB": str(tmp_path / "i.sqlite3"), "CITEDOCS_EMBEDDER": "none"}
    refused = _cli(env, "serve", "--host", "0.0.0.0", "--port", "0")
    assert refused.returncode != 0
    message = " ".join(refused.stderr.split())
    assert "--auth tokens" in message and "--no-auth" in message and "Traceback" not in refused.stderr
    with serving(env, tmp_path / "open.log", "--host", "0.0.0.0", "--no-auth") as url:
        assert httpx.get(url.replace("0.0.0.0", "127.0.0.1") + "/healthz").status_code == 200


# -- the library's rules, without a server ----------------------------------------------------------------


def test_scopes_grant_what_the_ones_below_them_do() -> None:
    asker = access.Principal("a", "ask")
    assert asker.allows("search") and asker.allows("ask") and not asker.allows("admin")
    with pytest.raises(PermissionDenied, match="change folders"):
        access.require("admin", asker)
    assert required_scope("POST", "/ask") == "ask"
    assert required_scope("POST", "/sources") == "admin" and required_scope("GET", "/sources") == "search"
    assert required_scope("GET", "/healthz") is None and required_scope("POST", "/mcp/") == "search"


def test_the_quota_refuses_past_the_rate_and_frees_as_the_minute_passes() -> None:
    now = [1000.0]
    quota = AnswerQuota(2, clock=lambda: now[0])
    who = access.Principal("t", "ask")
    quota.take(who)
    quota.take(who)
    with pytest.raises(RateLimited) as refused:
        quota.take(who)
    assert 1 <= refused.value.retry_after_s <= 61
    now[0] += 61
    quota.take(who)


def test_tokens_are_stored_as_hashes_and_expire(tmp_path: Path) -> None:
    app = Citedocs(Settings(db=str(tmp_path / "i.sqlite3"), embedder="none"))
    try:
        secret, record = app.create_token("ci", "search", expires_days=0.00001)
        raw = app.store._conn().execute("SELECT * FROM tokens").fetchall()
        assert secret not in json.dumps([dict(r) for r in raw]) and record.scope == "search"
        time.sleep(1.0)
        with pytest.raises(AuthRequired):
            app.authenticate(secret)
        with access.acting_as(access.Principal("x", "ask")), pytest.raises(PermissionDenied):
            app.create_token("other", "admin")
        with pytest.raises(NotFoundError):
            app.create_token("ghost", "search", sources=["no-such-folder"])
    finally:
        app.close()


def test_a_token_made_through_one_replica_works_on_another_and_revoking_it_stops_both(pg_url: str) -> None:
    first = Citedocs(Settings(db=pg_url, embedder="none"))
    second = Citedocs(Settings(db=pg_url, embedder="none"))
    try:
        secret, _ = first.create_token("shared", "ask")
        assert second.authenticate(secret).name == "shared"
        second.revoke_token("shared")
        with pytest.raises(AuthRequired):
            first.authenticate(secret)
    finally:
        first.close()
        second.close()
