"""The one Host/Origin allow-list (citedocs/hosts.py) that `serve`, its /mcp and `mcp --http` all enforce."""

from __future__ import annotations

from citedocs.api.guard import allowed_hosts as guard_hosts
from citedocs.hosts import allowed_hosts, allowed_origins, bind_name, loopback_only, matches
from citedocs.mcp import transport_security


def test_any_port_for_serve_and_the_bound_port_for_mcp_http() -> None:
    anywhere = allowed_hosts(["docs.lan"])
    assert (
        matches("localhost:8765", anywhere)
        and matches("docs.lan", anywhere)
        and matches("DOCS.LAN:1", anywhere)
    )
    assert not matches("evil.example:8765", anywhere) and not matches("docs.lan.evil:80", anywhere)
    bound = allowed_hosts(["docs.lan"], port=8765)
    assert (
        matches("docs.lan:8765", bound)
        and not matches("docs.lan:8766", bound)
        and not matches("docs.lan", bound)
    )
    assert matches("localhost", allowed_hosts(port=80))  # a browser leaves port 80 out


def test_a_name_with_a_port_is_kept_exactly_and_the_bind_address_is_a_name() -> None:
    hosts = allowed_hosts(["docs.example:443", "[fd00::1]:80"], bind_host="10.0.0.5", port=8765)
    assert {"docs.example:443", "[fd00::1]:80", "10.0.0.5:8765"} <= set(hosts)
    assert "docs.example:443:8765" not in hosts
    assert bind_name("::1") is None and bind_name("0.0.0.0") is None and bind_name("fd00::2") == "[fd00::2]"
    assert "https://docs.example:443" in allowed_origins(hosts)


def test_every_front_end_uses_this_list() -> None:
    assert guard_hosts(["api-1"]) == allowed_hosts(["api-1"])  # serve, every route and its /mcp
    sdk = transport_security(8765, host="10.0.0.5", allowed_hosts=["api-1"])  # mcp --http
    assert sdk.allowed_hosts == allowed_hosts(["api-1"], bind_host="10.0.0.5", port=8765)
    assert sdk.allowed_origins == allowed_origins(sdk.allowed_hosts)


def test_loopback_is_the_whole_loopback_range_in_every_spelling() -> None:
    """One rule for "only this machine can reach it": the page's write routes, serve's note and the refusal to
    serve beyond loopback without tokens all ask it."""
    for host in ("127.0.0.1", "127.0.0.2", "localhost", "LOCALHOST", "::1", "[::1]"):
        assert loopback_only(host), host
    for host in ("0.0.0.0", "::", "192.168.1.5", "docs.internal", "127.example.com", ""):
        assert not loopback_only(host), host
