from __future__ import annotations

import pytest

from citedocs.errors import AccessDenied, FetchError, UnsafeURLError
from citedocs.sources.ssrf import (
    check_ip,
    check_url,
    is_allowed_host,
    normalize_host,
    resolve_checked,
    site_prefix,
    within_prefix,
)

LOOPBACK = "127.0.0.1 is a loopback address"

HOSTILE = [
    # IPv4 loopback in every notation a browser or libc accepts
    ("http://127.0.0.1/", LOOPBACK),
    ("http://127.255.255.254:8080/x", "127.255.255.254 is a loopback address"),
    ("http://2130706433/", LOOPBACK),
    ("http://0177.0.0.1/", LOOPBACK),
    ("http://0x7f.0.0.1/", LOOPBACK),
    ("http://0x7F000001/", LOOPBACK),
    ("http://017700000001/", LOOPBACK),
    ("http://127.1/", LOOPBACK),
    ("http://127.0.1/", LOOPBACK),
    ("http://0x7f.1/", LOOPBACK),
    ("http://0x7f.0x0.0x0.0x1/", LOOPBACK),
    ("http://127.0.0.1./", LOOPBACK),
    ("http://%31%32%37.0.0.1/", LOOPBACK),
    ("http://127.0.0.%31/", LOOPBACK),
    ("http://１２７.０.０.１/", LOOPBACK),
    ("http://127。0。0。1/", LOOPBACK),
    ("HTTP://127.0.0.1:80/", LOOPBACK),
    ("http://127.0.0.1#@example.com/", LOOPBACK),
    # names for the local machine
    ("http://localhost/", "localhost names the local machine"),
    ("http://LOCALHOST./", "localhost names the local machine"),
    ("http://api.localhost:3000/", "api.localhost names the local machine"),
    ("http://loc%61lhost/", "localhost names the local machine"),
    # IPv6 loopback, mapped, compatible, transition forms
    ("http://[::1]/", "::1 is a loopback address"),
    ("http://[0:0:0:0:0:0:0:1]:8080/", "::1 is a loopback address"),
    ("http://[::ffff:127.0.0.1]/", "embedding 127.0.0.1, which is a loopback address"),
    ("http://[::ffff:7f00:1]/", "embedding 127.0.0.1, which is a loopback address"),
    ("http://[::FFFF:a00:5]/", "embedding 10.0.0.5, which is a private address"),
    ("http://[0:0:0:0:0:ffff:169.254.169.254]/", "embedding 169.254.169.254, which is a link-local address"),
    ("http://[::ffff:0.0.0.0]/", "embedding 0.0.0.0, which is an unspecified address"),
    ("http://[::127.0.0.1]/", "::7f00:1 is an IPv4-compatible address"),
    ("http://[2002:7f00:1::]/", "embedding 127.0.0.1, which is a loopback address"),
    ("http://[2002:a00:1::]/", "embedding 10.0.0.1, which is a private address"),
    ("http://[64:ff9b::10.0.0.1]/", "embedding 10.0.0.1, which is a private address"),
    (
        "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",
        "embedding 192.0.2.45, which is a documentation address",
    ),
    ("http://[64:ff9b:1::1]/", "64:ff9b:1::1 is a NAT64 local-use address"),
    # IPv6 local and special ranges
    ("http://[fe80::1%25eth0]/", "fe80::1 is a link-local address"),
    ("http://[FE80::abcd]/", "fe80::abcd is a link-local address"),
    ("http://[FC00::1]/", "fc00::1 is a unique-local address"),
    ("http://[fd12:3456::1]:8080/", "fd12:3456::1 is a unique-local address"),
    ("http://[fec0::1]/", "fec0::1 is a site-local address"),
    ("http://[ff02::1]/", "ff02::1 is a multicast address"),
    ("http://[::]/", ":: is an unspecified address"),
    ("http://[2001:db8::1]/", "2001:db8::1 is a documentation address"),
    ("http://[2001:2::1]/", "2001:2::1 is a benchmarking address"),
    ("http://[100::1]/", "100::1 is a discard-only address"),
    # IPv4 private and special ranges
    ("http://10.0.0.5/", "10.0.0.5 is a private address"),
    ("http://10.1/", "10.0.0.1 is a private address"),
    ("http://172.16.0.1/", "172.16.0.1 is a private address"),
    ("http://172.31.255.255/", "172.31.255.255 is a private address"),
    ("http://192.168.1.1/", "192.168.1.1 is a private address"),
    ("http://3232235777/", "192.168.1.1 is a private address"),
    ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"),
    ("http://100.64.0.1/", "100.64.0.1 is a shared (CGNAT) address"),
    ("http://100.127.255.254/", "100.127.255.254 is a shared (CGNAT) address"),
    ("http://0.0.0.0/", "0.0.0.0 is an unspecified address"),
    ("http://0/", "0.0.0.0 is an unspecified address"),
    ("http://224.0.0.1/", "224.0.0.1 is a multicast address"),
    ("http://255.255.255.255/", "255.255.255.255 is a broadcast address"),
    ("http://198.18.0.1/", "198.18.0.1 is a benchmarking address"),
    ("http://198.19.255.1/", "198.19.255.1 is a benchmarking address"),
    ("http://192.0.2.1/", "192.0.2.1 is a documentation address"),
    ("http://198.51.100.7/", "198.51.100.7 is a documentation address"),
    ("http://203.0.113.9/", "203.0.113.9 is a documentation address"),
    ("http://240.0.0.1/", "240.0.0.1 is a reserved address"),
    ("http://192.0.0.8/", "192.0.0.8 is an IETF protocol assignment address"),
    # schemes
    ("file:///etc/passwd", "scheme 'file' is not allowed"),
    ("gopher://127.0.0.1:70/_GET", "scheme 'gopher' is not allowed"),
    ("ftp://example.com/pub/", "scheme 'ftp' is not allowed"),
    ("data:text/plain,hello", "scheme 'data' is not allowed"),
    ("javascript:alert(1)", "scheme 'javascript' is not allowed"),
    ("dict://127.0.0.1:11211/", "scheme 'dict' is not allowed"),
    ("//example.com/llms.txt", "scheme '(none)' is not allowed"),
    # userinfo and parser-confusion tricks
    ("http://example.com@127.0.0.1/", "userinfo"),
    ("http://user:pass@example.com/", "userinfo"),
    ("http://127.0.0.1%40example.com/", "not a valid host"),
    ("http://example.com\\@127.0.0.1/", "backslashes"),
    ("http://exa mple.com/", "whitespace"),
    ("http://example.com\t.evil/", "whitespace"),
    ("http:/example.com/", "has no host"),
    ("http:///etc/passwd", "has no host"),
    # malformed hosts and ports
    ("http://0x1g.0.0.1/", "malformed IPv4 address"),
    ("http://exa%00mple.com/", "not a valid host name"),
    ("http://1.2.3.4.5/", "malformed IPv4 address"),
    ("http://08.0.0.1/", "malformed IPv4 address"),
    ("http://256.0.0.1/", "out of range"),
    ("http://1.2.3.4294967296/", "out of range"),
    ("http://[::1/", "not a valid URL"),
    ("http://[127.0.0.1]/", "not a valid URL"),
    ("http://[1::2::3]/", "not a valid"),
    ("http://127.0.0.1:99999/", "not a valid port"),
    ("http://example.com:8o/", "not a valid port"),
    ("http://a..b/", "not a valid host name"),
    ("http://example.com%0a/", "not a valid host name"),
]


@pytest.mark.parametrize(("url", "reason"), HOSTILE)
def test_hostile_url_is_refused_with_its_reason(url: str, reason: str) -> None:
    with pytest.raises(UnsafeURLError) as caught:
        check_url(url)
    assert reason in str(caught.value)
    assert str(caught.value).startswith("refused: ")


def test_the_hostile_table_is_long_enough() -> None:
    assert len(HOSTILE) >= 40


def test_private_refusal_says_how_to_allow_intranet_hosts() -> None:
    with pytest.raises(UnsafeURLError) as caught:
        check_url("http://10.0.0.5/docs/")
    assert str(caught.value) == (
        "refused: 10.0.0.5 is a private address. "
        "To fetch intranet docs add the host to CITEDOCS_ALLOWED_PRIVATE_HOSTS."
    )
    assert isinstance(caught.value, AccessDenied)
    assert isinstance(caught.value, FetchError)


SAFE = [
    ("https://example.com/llms.txt", "https://example.com/llms.txt"),
    ("https://EXAMPLE.com./docs/", "https://example.com/docs/"),
    ("https://example.com", "https://example.com/"),
    ("https://example.com:443/a?b=1#frag", "https://example.com/a?b=1"),
    ("http://example.com:8080/a", "http://example.com:8080/a"),
    ("http://93.184.216.34/", "http://93.184.216.34/"),
    ("http://0x5d.0xb8.0xd8.0x22/", "http://93.184.216.34/"),
    ("http://1572395042/", "http://93.184.216.34/"),
    ("http://8.8.8.8./", "http://8.8.8.8/"),
    ("http://[2606:4700:4700::1111]/", "http://[2606:4700:4700::1111]/"),
    ("http://[2002:808:808::]/", "http://[2002:808:808::]/"),
    ("https://bücher.example/a/../b/./c", "https://xn--bcher-kva.example/b/c"),
    ("https://docs.example.com/%2e%2e/x", "https://docs.example.com/x"),
    ("https://127.0.0.1.nip.io/", "https://127.0.0.1.nip.io/"),
    ("https://my_host.example.com/", "https://my_host.example.com/"),
    ("  https://example.com/a  ", "https://example.com/a"),
]


@pytest.mark.parametrize(("url", "canonical"), SAFE)
def test_safe_url_is_accepted_in_canonical_form(url: str, canonical: str) -> None:
    assert check_url(url).url == canonical


@pytest.mark.parametrize(
    ("host", "normal"),
    [
        ("127.1", "127.0.0.1"),
        ("0x7f.0.0.1", "127.0.0.1"),
        ("0177.0.0.01", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),
        ("0x", "0.0.0.0"),
        ("Example.COM.", "example.com"),
        ("[::FFFF:127.0.0.1]", "::ffff:7f00:1"),
        ("[fe80::1%25eth0]", "fe80::1"),
        ("fe80::1%eth0", "fe80::1"),
        ("ＥＸＡＭＰＬＥ。com", "example.com"),
        ("bücher.example", "xn--bcher-kva.example"),
    ],
)
def test_normalize_host(host: str, normal: str) -> None:
    assert normalize_host(host) == normal


def test_allow_list_admits_named_private_hosts_only() -> None:
    assert check_url("http://127.0.0.1:8000/docs/", ["127.0.0.1"]).port == 8000
    assert check_url("http://0x7f.1/", ["127.0.0.1"]).host == "127.0.0.1"
    assert check_url("http://[::1]/", ["[::1]"]).host == "::1"
    assert check_url("http://localhost/", ["LOCALHOST"]).host == "localhost"
    with pytest.raises(UnsafeURLError, match=r"127\.0\.0\.2 is a loopback"):
        check_url("http://127.0.0.2/", ["127.0.0.1"])
    with pytest.raises(UnsafeURLError, match="never fetched"):
        check_url("http://169.254.169.254/", ["169.254.169.254"])
    with pytest.raises(UnsafeURLError, match="never fetched"):
        check_url("http://0.0.0.0/", ["0.0.0.0"])


def test_allow_list_wildcards_match_subdomains_on_label_boundaries() -> None:
    allowed = ["*.corp.example"]
    assert is_allowed_host("docs.corp.example", allowed)
    assert is_allowed_host("a.b.corp.example", allowed)
    assert not is_allowed_host("corp.example", allowed)
    assert not is_allowed_host("evilcorp.example", allowed)
    assert not is_allowed_host("docs.corp.example.evil", allowed)
    assert not is_allowed_host("anything", ["*"])


def test_check_ip_names_the_host_that_resolved() -> None:
    check_ip("93.184.216.34", "example.com")
    check_ip("10.0.0.5", "wiki.corp", ["wiki.corp"])
    with pytest.raises(UnsafeURLError, match=r"wiki\.corp resolves to 10\.0\.0\.5, a private address"):
        check_ip("10.0.0.5", "wiki.corp")
    with pytest.raises(FetchError, match="not an IP address"):
        check_ip("not-an-ip", "example.com")


def test_resolve_checked_checks_every_address() -> None:
    def resolver(host: str, port: int) -> list[str]:
        return {"mixed.test": ["93.184.216.34", "10.0.0.1"], "ok.test": ["93.184.216.34", "2606:4700::1"]}[
            host
        ]

    assert resolve_checked("OK.test.", 443, resolver) == ["93.184.216.34", "2606:4700::1"]
    with pytest.raises(UnsafeURLError, match=r"mixed\.test resolves to 10\.0\.0\.1"):
        resolve_checked("mixed.test", 443, resolver)
    assert resolve_checked("0x7f.1", 80, resolver, ["127.0.0.1"]) == ["127.0.0.1"]


def test_resolve_checked_reports_empty_answers() -> None:
    with pytest.raises(FetchError, match="no addresses"):
        resolve_checked("empty.test", 80, lambda host, port: [])


BASE = "https://x.dev/docs/llms.txt"


@pytest.mark.parametrize(
    ("url", "inside"),
    [
        ("https://x.dev/docs", True),
        ("https://x.dev/docs/", True),
        ("https://x.dev/docs/guide/intro.md", True),
        ("https://x.dev:443/docs/a?q=1", True),
        ("https://X.DEV./docs/a", True),
        ("https://x.dev/docs/./a/../b", True),
        ("https://x.dev/docsearch", False),
        ("https://x.dev/docs-old/a", False),
        ("https://x.dev/", False),
        ("https://x.dev/docs/../admin", False),
        ("https://x.dev/docs/%2e%2e/admin", False),
        ("https://x.dev/docs/%2E%2E/admin", False),
        ("https://x.dev/docs/..%2fadmin", False),
        ("https://x.dev/docs%2F..%2Fadmin", False),
        ("https://x.dev/docs/a%5c..%5cadmin", False),
        ("https://x.dev:8443/docs/a", False),
        ("http://x.dev/docs/a", False),
        ("https://docs.x.dev/docs/a", False),
        ("https://x.dev.evil/docs/a", False),
        ("https://user@x.dev/docs/a", False),
        ("file:///docs/a", False),
        ("not a url", False),
    ],
)
def test_within_prefix(url: str, inside: bool) -> None:
    assert within_prefix(url, BASE) is inside


def test_within_prefix_at_the_root_allows_the_whole_origin() -> None:
    assert within_prefix("https://x.dev/anything/at/all", "https://x.dev/llms.txt")
    assert not within_prefix("https://y.dev/a", "https://x.dev/llms.txt")
    assert site_prefix("https://x.dev/docs/llms.txt") == "https://x.dev/docs/"
    assert site_prefix("https://x.dev") == "https://x.dev/"


@pytest.mark.parametrize(
    ("host", "reason"),
    [("1::2::3", "not a valid IPv6 address"), ("[10.0.0.1]", "not a valid IPv6 address"), ("", "no host")],
)
def test_normalize_host_refuses_malformed_hosts(host: str, reason: str) -> None:
    with pytest.raises(UnsafeURLError, match=reason):
        normalize_host(host)
