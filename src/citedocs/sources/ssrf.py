"""The SSRF guard: which URLs and addresses citedocs may fetch, decided by pure functions.

Hosts are normalised the way WHATWG URL parsing does (percent-decoding, UTS46 mapping, inet_aton-style IPv4
numbers), so `http://0x7f.1/` and `http://2130706433/` are seen as 127.0.0.1. Hostnames are judged by every
address they resolve to; the fetcher then connects to exactly those checked addresses.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable, Collection
from dataclasses import dataclass
from urllib.parse import unquote_to_bytes, urlsplit

import idna

from citedocs.errors import FetchError, UnsafeURLError

__all__ = [
    "ALLOWED_SCHEMES",
    "ParsedURL",
    "Resolver",
    "check_ip",
    "check_url",
    "is_allowed_host",
    "normalize_host",
    "resolve_checked",
    "site_prefix",
    "system_resolver",
    "within_prefix",
]

Resolver = Callable[[str, int], list[str]]
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

ALLOWED_SCHEMES = {"http": 80, "https": 443}
ALLOW_HINT = "To fetch intranet docs add the host to CITEDOCS_ALLOWED_PRIVATE_HOSTS."
NEVER_HINT = "Such addresses are never fetched, even for allowed hosts; use a public or intranet URL."

# Labels that the allow-list cannot override: nothing sensible is served there, and link-local holds
# cloud metadata endpoints (169.254.169.254).
NEVER_ALLOWED = frozenset({"unspecified", "multicast", "broadcast", "link-local", "IPv4-compatible"})

_V4_RANGES = [
    (ipaddress.IPv4Network(net), label)
    for net, label in [
        ("0.0.0.0/8", "unspecified"),
        ("10.0.0.0/8", "private"),
        ("100.64.0.0/10", "shared (CGNAT)"),
        ("127.0.0.0/8", "loopback"),
        ("169.254.0.0/16", "link-local"),
        ("172.16.0.0/12", "private"),
        ("192.0.0.0/24", "IETF protocol assignment"),
        ("192.0.2.0/24", "documentation"),
        ("192.88.99.0/24", "6to4 relay anycast"),
        ("192.168.0.0/16", "private"),
        ("198.18.0.0/15", "benchmarking"),
        ("198.51.100.0/24", "documentation"),
        ("203.0.113.0/24", "documentation"),
        ("224.0.0.0/4", "multicast"),
        ("255.255.255.255/32", "broadcast"),
        ("240.0.0.0/4", "reserved"),
    ]
]
_V6_RANGES = [
    (ipaddress.IPv6Network(net), label)
    for net, label in [
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        ("::/96", "IPv4-compatible"),
        ("64:ff9b:1::/48", "NAT64 local-use"),
        ("100::/64", "discard-only"),
        ("2001:2::/48", "benchmarking"),
        ("2001:db8::/32", "documentation"),
        ("3fff::/20", "documentation"),
        ("2001:10::/28", "ORCHID"),
        ("2001:20::/28", "ORCHIDv2"),
        ("fc00::/7", "unique-local"),
        ("fe80::/10", "link-local"),
        ("fec0::/10", "site-local"),
        ("ff00::/8", "multicast"),
    ]
]
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_TEREDO = ipaddress.IPv6Network("2001::/32")
_ENDS_IN_NUMBER = re.compile(r"[0-9]+|0x[0-9a-f]*", re.IGNORECASE)
_NUMBER_DIGITS = {
    8: re.compile(r"[0-7]*"),
    10: re.compile(r"[0-9]*"),
    16: re.compile(r"[0-9a-f]*", re.IGNORECASE),
}
_DOMAIN_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
_UNSAFE_CHARS = re.compile(r"[\x00-\x20\x7f\\]")
_ENCODED_SEPARATOR = re.compile(r"%(2f|5c)", re.IGNORECASE)
_DOT_SEGMENTS = {".": ".", "%2e": ".", "..": "..", ".%2e": "..", "%2e.": "..", "%2e%2e": ".."}


@dataclass(frozen=True, slots=True)
class ParsedURL:
    """A URL that passed the syntax and literal-address checks, with its host normalised."""

    scheme: str
    host: str
    port: int
    path: str
    query: str = ""

    @property
    def host_is_ip(self) -> bool:
        return _as_ip(self.host) is not None

    @property
    def origin(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = ALLOWED_SCHEMES[self.scheme] == self.port
        return f"{self.scheme}://{host}" if default else f"{self.scheme}://{host}:{self.port}"

    @property
    def url(self) -> str:
        """The canonical form citedocs requests: what was checked is what is fetched."""
        return self.origin + self.path + (f"?{self.query}" if self.query else "")


# `hono.dev/llms.txt`, `localhost:8080/x`, `//example.com/x`: a host (with a dot, or localhost) but no scheme.
_BARE_HOST = re.compile(
    r"(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,63}(?::\d{1,5})?(?:[/?#]|$)|localhost(?::\d{1,5})?(?:[/?#]|$)"
)


def _refuse(message: str, hint: str = "Use an ordinary http(s) URL of a public site.") -> UnsafeURLError:
    return UnsafeURLError(f"refused: {message}.", hint)


def _parse_ipv4_number(part: str) -> int | None:
    radix, digits = 10, part
    if part[:2].lower() == "0x":
        radix, digits = 16, part[2:]
    elif len(part) > 1 and part.startswith("0"):
        radix, digits = 8, part[1:]
    if not _NUMBER_DIGITS[radix].fullmatch(digits):
        return None
    return int(digits, radix) if digits else 0


def _parse_ipv4(host: str) -> str | None:
    """WHATWG IPv4 parsing: None when the host is a domain, the dotted quad when it is a number."""
    parts = host.split(".")
    if parts[-1] == "" and len(parts) > 1:
        parts.pop()
    if not _ENDS_IN_NUMBER.fullmatch(parts[-1]):
        return None
    numbers = [_parse_ipv4_number(part) if part else None for part in parts]
    if len(parts) > 4 or any(n is None for n in numbers):
        raise _refuse(f"{host!r} is not a valid host (it reads as a malformed IPv4 address)")
    values = [n for n in numbers if n is not None]
    if any(n > 255 for n in values[:-1]) or values[-1] >= 256 ** (5 - len(values)):
        raise _refuse(f"{host!r} is not a valid host (an IPv4 part is out of range)")
    total = values[-1] + sum(n * 256 ** (3 - i) for i, n in enumerate(values[:-1]))
    return str(ipaddress.IPv4Address(total))


def _as_ip(text: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def normalize_host(host: str) -> str:
    """The canonical IP string, or the lowercase ASCII hostname without a trailing dot."""
    raw = host.strip()
    if raw.startswith("[") and raw.endswith("]"):
        raw = raw[1:-1]
        bracketed = True
    else:
        bracketed = False
    try:
        decoded = unquote_to_bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        raise _refuse(f"{host!r} is not a valid host (bad percent-encoding)") from None
    if bracketed or ":" in decoded:
        address = _as_ip(decoded.split("%", 1)[0])
        if not isinstance(address, ipaddress.IPv6Address):
            raise _refuse(f"{host!r} is not a valid IPv6 address")
        return str(address)
    try:
        mapped = idna.uts46_remap(decoded, std3_rules=False, transitional=False).lower()
    except (idna.IDNAError, UnicodeError, ValueError):
        raise _refuse(f"{host!r} is not a valid host name") from None
    if not mapped:
        raise _refuse("the URL has no host")
    ipv4 = _parse_ipv4(mapped)
    if ipv4 is not None:
        return ipv4
    name = mapped[:-1] if mapped.endswith(".") else mapped
    try:
        labels = [
            label if label.isascii() else idna.alabel(label).decode("ascii") for label in name.split(".")
        ]
    except (idna.IDNAError, UnicodeError):
        raise _refuse(f"{host!r} is not a valid host name") from None
    if len(name) > 253 or not all(_DOMAIN_LABEL.fullmatch(label) for label in labels):
        raise _refuse(f"{host!r} is not a valid host name")
    return ".".join(labels)


def _split(url: str) -> ParsedURL:
    """Strict syntax: one way to read the URL, so no parser can disagree with the guard."""
    text = url.strip()
    if _UNSAFE_CHARS.search(text):
        raise _refuse(f"{text[:80]!r} contains whitespace, control characters or backslashes")
    try:
        parts = urlsplit(text)
    except ValueError:
        raise _refuse(f"{text[:80]!r} is not a valid URL (check the brackets around IPv6 hosts)") from None
    scheme = parts.scheme.lower()
    if scheme not in ALLOWED_SCHEMES:
        shown = scheme or "(none)"
        message = f"scheme {shown!r} is not allowed; only http and https URLs can be fetched"
        if "://" not in text and _BARE_HOST.match(text.lstrip("/")):
            raise _refuse(message, f"Write the whole URL: https://{text.lstrip('/')}")
        raise _refuse(message)
    if not text[len(scheme) + 1 :].startswith("//") or not parts.netloc:
        raise _refuse(f"{text[:80]!r} has no host")
    netloc = parts.netloc
    if "@" in netloc:
        raise _refuse("user name or password in URL (userinfo) is not allowed", "Remove the 'user@' part.")
    if netloc.startswith("["):
        end = netloc.find("]")
        if end < 0:
            raise _refuse(f"{netloc!r} has an unclosed IPv6 bracket")
        host_text, rest = netloc[: end + 1], netloc[end + 1 :]
        if rest and not rest.startswith(":"):
            raise _refuse(f"{netloc!r} is not a valid host and port")
        port_text = rest[1:]
    else:
        host_text, _, port_text = netloc.partition(":")
        if ":" in port_text:
            raise _refuse(f"{netloc!r} is not a valid host and port")
    if port_text and not (port_text.isascii() and port_text.isdigit() and 0 < int(port_text) <= 65535):
        raise _refuse(f"port {port_text!r} is not a valid port (1-65535)")
    port = int(port_text) if port_text else ALLOWED_SCHEMES[scheme]
    return ParsedURL(scheme, normalize_host(host_text), port, _remove_dot_segments(parts.path), parts.query)


def _remove_dot_segments(path: str) -> str:
    output: list[str] = []
    segments = (path or "/").split("/")[1:]
    for index, segment in enumerate(segments):
        dots = _DOT_SEGMENTS.get(segment.lower())
        last = index == len(segments) - 1
        if dots == "..":
            if output:
                output.pop()
        elif dots is None:
            output.append(segment)
        if dots is not None and last:
            output.append("")
    return "/" + "/".join(output)


def is_allowed_host(host: str, allowed_private_hosts: Collection[str]) -> bool:
    """Exact names or IP literals, case-insensitive; `*.corp.example` matches subdomains only."""
    for entry in allowed_private_hosts:
        entry = entry.strip().lower()
        if entry.startswith("*."):
            suffix = entry[1:].rstrip(".")
            if len(suffix) > 1 and host.endswith(suffix):
                return True
            continue
        try:
            if entry and normalize_host(entry) == host:
                return True
        except UnsafeURLError:
            continue
    return False


def _classify(address: IPAddress) -> tuple[str, str | None]:
    """(label, embedded IPv4) of a non-public address, or ("", None) when it is public."""
    if isinstance(address, ipaddress.IPv4Address):
        label = next((label for network, label in _V4_RANGES if address in network), "")
        return (label or ("" if address.is_global else "reserved")), None
    embedded = address.ipv4_mapped or address.sixtofour
    if embedded is None and address in _NAT64:
        embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if embedded is None and address in _TEREDO and address.teredo:
        embedded = address.teredo[1]
    if embedded is not None:
        return _classify(embedded)[0], str(embedded)
    label = next((label for network, label in _V6_RANGES if address in network), "")
    return (label or ("" if address.is_global else "reserved")), None


def check_ip(ip: str, host: str, allowed_private_hosts: Collection[str] = ()) -> None:
    """Refuse an address that is not public, unless `host` is allow-listed (and the range allows it)."""
    address = _as_ip(ip.split("%", 1)[0])
    if address is None:
        raise FetchError(
            f"the resolver returned {ip!r} for {host}, which is not an IP address.", "Check DNS."
        )
    label, embedded = _classify(address)
    if not label:
        return
    if label not in NEVER_ALLOWED and is_allowed_host(host, allowed_private_hosts):
        return
    article = "an" if label.startswith(("unspecified", "IETF", "IPv4", "ORCHID")) else "a"
    kind = f"{article} {label} address"
    if embedded is not None:
        kind = f"an address embedding {embedded}, which is {kind}"
    what = f"{address} is {kind}" if host == str(address) else f"{host} resolves to {address}, {kind}"
    raise _refuse(what, NEVER_HINT if label in NEVER_ALLOWED else ALLOW_HINT)


def check_url(url: str, allowed_private_hosts: Collection[str] = ()) -> ParsedURL:
    """Scheme, userinfo, port, host-name and literal-address checks; hostnames still need resolving."""
    parsed = _split(url)
    host = parsed.host
    if parsed.host_is_ip:
        check_ip(host, host, allowed_private_hosts)
    elif (host == "localhost" or host.endswith(".localhost")) and not is_allowed_host(
        host, allowed_private_hosts
    ):
        raise _refuse(f"{host} names the local machine (localhost)", ALLOW_HINT)
    return parsed


def system_resolver(host: str, port: int) -> list[str]:
    """Every address the operating system gives for `host`, in its order."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def resolve_checked(
    host: str, port: int, resolver: Resolver = system_resolver, allowed_private_hosts: Collection[str] = ()
) -> list[str]:
    """The addresses to connect to for `host`, each one checked; refuses if any is not public."""
    name = normalize_host(host)
    if _as_ip(name) is not None:
        addresses = [name]
    else:
        try:
            addresses = resolver(name, port)
        except (OSError, UnicodeError) as exc:
            raise FetchError(
                f"could not resolve {name}: {exc}.", "Check the host name and your network connection."
            ) from exc
        if not addresses:
            raise FetchError(f"could not resolve {name}: no addresses.", "Check the host name.")
    for address in addresses:
        check_ip(address, name, allowed_private_hosts)
    return addresses


def site_prefix(base: str) -> str:
    """Origin plus the directory of the base URL's path: the area a site's fetches are confined to."""
    parsed = _split(base)
    return parsed.origin + parsed.path[: parsed.path.rfind("/") + 1]


def within_prefix(url: str, base: str) -> bool:
    """Same origin as `base` and a path inside its directory, matched on path boundaries."""
    try:
        target, root = _split(url), _split(base)
    except UnsafeURLError:
        return False
    if (target.scheme, target.host, target.port) != (root.scheme, root.host, root.port):
        return False
    if _ENCODED_SEPARATOR.search(target.path):
        return False
    prefix = root.path[: root.path.rfind("/") + 1]
    return target.path.startswith(prefix) or (prefix != "/" and target.path == prefix[:-1])
