"""The one Host/Origin allow-list of every HTTP front end (`serve`, its /mcp, `mcp --http`), against DNS rebinding.

A page on evil.example whose name is re-pointed at 127.0.0.1 reaches a local server with `Host: evil.example` and
its own Origin; a browser can forge neither. So a request is served only when its Host is a loopback name, the
name of the address the server is bound to, or a configured one (`CITEDOCS_MCP_ALLOWED_HOSTS`), and its Origin,
when present, is one of those hosts over http or https. Patterns are the MCP SDK's (`transport_security`):
exact, or `name:*` for any port. Pure functions of strings; api/guard.py enforces them, the MCP SDK too.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence

__all__ = [
    "LOOPBACK_NAMES",
    "SETTING",
    "allowed_hosts",
    "allowed_origins",
    "bind_name",
    "loopback_only",
    "matches",
]

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
# binds whose address is no name a client uses: loopback, or every interface (clients then use a name)
_NAMELESS_BINDS = frozenset({"0.0.0.0", "::", "127.0.0.1", "localhost", "::1"})
SETTING = "CITEDOCS_MCP_ALLOWED_HOSTS"
_WITH_PORT = re.compile(r"(?:^[^:\[\]]+|\])(:\d+)$")


def bind_name(host: str) -> str | None:
    """The Host name a bind address adds ("[fd00::1]" for an IPv6 one), or None for loopback and any-address."""
    if host in _NAMELESS_BINDS:
        return None
    return f"[{host}]" if ":" in host else host


def loopback_only(host: str) -> bool:
    """Whether a server bound to `host` can only be reached from this machine: `localhost` or a loopback
    address (127.0.0.0/8, ::1), bracketed or not."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def allowed_hosts(
    extra: Sequence[str] = (), *, bind_host: str = "127.0.0.1", port: int | None = None
) -> list[str]:
    """Loopback names, the bind address's name and `extra` ones. A name given with a port keeps it; the others
    are allowed on `port` (on any port, or none, when `port` is None; a bare name too on port 80)."""
    names = [*LOOPBACK_NAMES, *filter(None, [bind_name(bind_host)]), *extra]
    hosts: list[str] = []
    for name in dict.fromkeys(n.lower() for n in names):
        if _WITH_PORT.search(name):
            hosts.append(name)
        elif port is None:
            hosts += [name, f"{name}:*"]
        else:
            hosts += [f"{name}:{port}", *([name] if port == 80 else [])]
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
