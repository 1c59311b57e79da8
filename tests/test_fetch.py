from __future__ import annotations

import datetime
import gzip
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from citedocs.errors import FetchError, UnsafeURLError
from citedocs.settings import Settings
from citedocs.sources.fetch import FETCH_MAX_BYTES, GuardedFetcher, GuardedTransport

ETAG = '"v1"'
LAST_MODIFIED = "Wed, 21 Oct 2015 07:28:00 GMT"
BIG_BYTES = 20 * 1024 * 1024
CHUNK = 64 * 1024


@dataclass
class ServerState:
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    big_sent: list[int] = field(default_factory=list)
    big_done: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    name: str = "main"


def make_handler(state: ServerState) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def reply(self, status: int, body: bytes = b"", **headers: str) -> None:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name.replace("_", "-"), value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            state.requests.append((self.path, dict(self.headers.items())))
            path = urlsplit(self.path).path
            query = parse_qs(urlsplit(self.path).query)
            if path.endswith("/redirect"):
                self.reply(302, Location=query["to"][0])
            elif path == "/loop":
                self.reply(302, Location="/loop")
            elif path == "/big":
                self.stream_big()
            elif path == "/big-declared":
                self.send_response(200)
                self.send_header("Content-Length", str(BIG_BYTES))
                self.end_headers()
            elif path == "/bomb":
                body = gzip.compress(b"\0" * (5 * 1024 * 1024))
                self.reply(200, body, Content_Encoding="gzip", Content_Type="text/plain")
            elif path == "/etag":
                if self.headers.get("If-None-Match") == ETAG:
                    self.reply(304, ETag=ETAG)
                else:
                    self.reply(200, b"tagged", ETag=ETAG, Content_Type="text/plain")
            elif path == "/lastmod":
                if self.headers.get("If-Modified-Since") == LAST_MODIFIED:
                    self.reply(304)
                else:
                    self.reply(200, b"dated", Last_Modified=LAST_MODIFIED)
            elif path == "/slow":
                state.release.wait(10)
                self.reply(200, b"late")
            elif path == "/drip":
                self.send_response(200)
                self.end_headers()
                while not state.release.wait(0.05):
                    self.wfile.write(b"x")
                    self.wfile.flush()
            elif path == "/missing":
                self.reply(404, b"no")
            else:
                body = f"# {state.name} {path}\n".encode()
                self.reply(200, body, Content_Type="text/markdown; charset=utf-8")

        def stream_big(self) -> None:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, CHUNK)
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            sent = 0
            try:
                while sent < BIG_BYTES:
                    self.wfile.write(b"a" * CHUNK)
                    sent += CHUNK
            except OSError:
                pass
            state.big_sent.append(sent)
            state.big_done.set()

    return Handler


@pytest.fixture
def serve() -> Iterator[Callable[..., tuple[str, int, ServerState]]]:
    started: list[tuple[ThreadingHTTPServer, ServerState]] = []

    def start(
        host: str = "127.0.0.1", port: int = 0, tls: ssl.SSLContext | None = None, name: str = "main"
    ) -> tuple[str, int, ServerState]:
        state = ServerState(name=name)
        server = ThreadingHTTPServer((host, port), make_handler(state))
        if tls is not None:
            server.socket = tls.wrap_socket(server.socket, server_side=True)
        threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
        started.append((server, state))
        return host, server.server_address[1], state

    yield start
    for server, state in started:
        state.release.set()
        server.shutdown()
        server.server_close()


@pytest.fixture
def local(serve: Callable[..., tuple[str, int, ServerState]]) -> tuple[str, ServerState]:
    host, port, state = serve()
    return f"http://{host}:{port}", state


def fixed(mapping: dict[str, list[str]], calls: list[str] | None = None) -> Callable[[str, int], list[str]]:
    def resolve(host: str, port: int) -> list[str]:
        if calls is not None:
            calls.append(host)
        return mapping[host]

    return resolve


def test_allow_listed_loopback_server_is_fetched(local: tuple[str, ServerState]) -> None:
    base, state = local
    with GuardedFetcher(allowed_private_hosts=["127.0.0.1"]) as fetcher:
        result = fetcher.fetch(f"{base}/docs/page.md")
    assert result.status == 200
    assert result.content == b"# main /docs/page.md\n"
    assert result.content_type == "text/markdown; charset=utf-8"
    assert result.text() == "# main /docs/page.md\n"
    assert result.url == f"{base}/docs/page.md"
    assert not result.not_modified
    assert state.requests[0][1]["User-Agent"] == "citedocs/0.1"


def test_loopback_server_without_allow_list_is_refused_before_any_request(
    local: tuple[str, ServerState],
) -> None:
    base, state = local
    with GuardedFetcher() as fetcher, pytest.raises(UnsafeURLError, match=r"127\.0\.0\.1 is a loopback"):
        fetcher.fetch(f"{base}/page")
    with GuardedFetcher() as fetcher, pytest.raises(UnsafeURLError, match="loopback"):
        fetcher.fetch(base.replace("127.0.0.1", "0x7f.1") + "/page")
    assert state.requests == []


def test_allow_list_comes_from_the_environment(
    local: tuple[str, ServerState], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    base, _ = local
    monkeypatch.setenv("CITEDOCS_CONFIG", str(tmp_path / "absent.toml"))
    monkeypatch.setenv("CITEDOCS_ALLOWED_PRIVATE_HOSTS", "wiki.corp, 127.0.0.1")
    settings = Settings(db=str(tmp_path / "index.sqlite3"))
    with GuardedFetcher.from_settings(settings) as fetcher:
        assert fetcher.fetch(f"{base}/page").status == 200
    assert fetcher.max_bytes == FETCH_MAX_BYTES


def test_hostname_connects_to_the_resolved_address_and_keeps_the_host_header(
    local: tuple[str, ServerState],
) -> None:
    base, state = local
    port = urlsplit(base).port
    resolver = fixed({"docs.example.test": ["127.0.0.1"]})
    with GuardedFetcher(allowed_private_hosts=["DOCS.example.test"], resolver=resolver) as fetcher:
        result = fetcher.fetch(f"http://docs.example.test:{port}/page")
    assert result.url == f"http://docs.example.test:{port}/page"
    assert state.requests[0][1]["Host"] == f"docs.example.test:{port}"


def test_dns_rebinding_connects_only_to_the_checked_address(
    serve: Callable[..., tuple[str, int, ServerState]],
) -> None:
    _, port, first = serve("127.0.0.1", name="checked")
    try:
        _, _, rebound = serve("127.0.0.2", port, name="rebound")
    except OSError:
        pytest.skip("cannot bind 127.0.0.2 on this machine")
    answers = iter([["127.0.0.1"]])
    calls: list[str] = []

    def rebinding(host: str, port: int) -> list[str]:
        calls.append(host)
        return next(answers, ["127.0.0.2"])

    with GuardedFetcher(allowed_private_hosts=["docs.example.test"], resolver=rebinding) as fetcher:
        result = fetcher.fetch(f"http://docs.example.test:{port}/page")
    assert result.content == b"# checked /page\n"
    assert calls == ["docs.example.test"]
    assert len(first.requests) == 1
    assert rebound.requests == []


def test_name_resolving_to_public_and_private_is_refused(local: tuple[str, ServerState]) -> None:
    base, state = local
    port = urlsplit(base).port
    resolver = fixed({"docs.example.test": ["93.184.216.34", "127.0.0.1"]})
    with (
        GuardedFetcher(resolver=resolver) as fetcher,
        pytest.raises(UnsafeURLError, match=r"docs.example.test resolves to 127.0.0.1, a loopback address"),
    ):
        fetcher.fetch(f"http://docs.example.test:{port}/page")
    assert state.requests == []


def test_name_resolving_to_metadata_is_refused_even_when_allow_listed() -> None:
    resolver = fixed({"docs.example.test": ["169.254.169.254"]})
    fetcher = GuardedFetcher(allowed_private_hosts=["docs.example.test"], resolver=resolver)
    with fetcher, pytest.raises(UnsafeURLError, match=r"link-local address.*never fetched"):
        fetcher.fetch("http://docs.example.test/latest/meta-data/")


def test_unresolvable_name_is_a_fetch_error() -> None:
    def failing(host: str, port: int) -> list[str]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    with GuardedFetcher(resolver=failing) as fetcher, pytest.raises(FetchError, match="could not resolve"):
        fetcher.fetch("https://nowhere.example.test/")


@pytest.mark.parametrize(
    ("target", "reason"),
    [
        ("http://10.0.0.1/", "10.0.0.1 is a private address"),
        ("http://169.254.169.254/latest/", "169.254.169.254 is a link-local address"),
        ("http://localhost:{port}/page", "localhost names the local machine"),
        ("http://other.example.test:{port}/page", "other.example.test resolves to 127.0.0.1"),
        ("file:///etc/passwd", "scheme 'file' is not allowed"),
        ("http://user@127.0.0.1:{port}/page", "userinfo"),
    ],
)
def test_redirect_hop_is_rechecked(local: tuple[str, ServerState], target: str, reason: str) -> None:
    base, state = local
    port = urlsplit(base).port
    resolver = fixed({"other.example.test": ["127.0.0.1"]})
    with (
        GuardedFetcher(allowed_private_hosts=["127.0.0.1"], resolver=resolver) as fetcher,
        pytest.raises(UnsafeURLError, match=reason),
    ):
        fetcher.fetch(str(httpx.URL(f"{base}/redirect", params={"to": target.format(port=port)})))
    assert len(state.requests) == 1


def test_relative_redirect_is_followed(local: tuple[str, ServerState]) -> None:
    base, _ = local
    with GuardedFetcher(allowed_private_hosts=["127.0.0.1"]) as fetcher:
        result = fetcher.fetch(f"{base}/docs/redirect?to=../other/./page")
    assert result.url == f"{base}/other/page"
    assert result.content == b"# main /other/page\n"


def test_redirect_loop_stops_at_the_limit(local: tuple[str, ServerState]) -> None:
    base, state = local
    with (
        GuardedFetcher(allowed_private_hosts=["127.0.0.1"], max_redirects=5) as fetcher,
        pytest.raises(FetchError, match="redirected more than 5 times"),
    ):
        fetcher.fetch(f"{base}/loop")
    assert len(state.requests) == 6


def test_confinement_refuses_a_redirect_outside_the_prefix(local: tuple[str, ServerState]) -> None:
    base, state = local
    site = f"{base}/docs/llms.txt"
    with GuardedFetcher(allowed_private_hosts=["127.0.0.1"]) as fetcher:
        assert fetcher.fetch(f"{base}/docs/redirect?to=/docs/guide", confine_to=site).status == 200
        with pytest.raises(UnsafeURLError, match=r"outside http://127.0.0.1:\d+/docs/"):
            fetcher.fetch(f"{base}/docs/redirect?to=/docsearch", confine_to=site)
        with pytest.raises(UnsafeURLError, match="outside"):
            fetcher.fetch(f"{base}/admin", confine_to=site)
    assert [path for path, _ in state.requests] == [
        "/docs/redirect?to=/docs/guide",
        "/docs/guide",
        "/docs/redirect?to=/docsearch",
    ]


def test_body_over_the_cap_stops_the_download(local: tuple[str, ServerState]) -> None:
    base, state = local
    cap = 1024 * 1024
    with (
        GuardedFetcher(allowed_private_hosts=["127.0.0.1"], max_bytes=cap) as fetcher,
        pytest.raises(FetchError, match=r"limit is 1048576 bytes.*add its folder"),
    ):
        fetcher.fetch(f"{base}/big")
    assert state.big_done.wait(5)
    assert state.big_sent[0] < BIG_BYTES // 2


def test_declared_length_over_the_cap_is_refused_before_reading(local: tuple[str, ServerState]) -> None:
    base, _ = local
    with (
        GuardedFetcher(allowed_private_hosts=["127.0.0.1"], max_bytes=1000) as fetcher,
        pytest.raises(FetchError, match=f"announces {BIG_BYTES} bytes"),
    ):
        fetcher.fetch(f"{base}/big-declared")


def test_cap_counts_decompressed_bytes(local: tuple[str, ServerState]) -> None:
    base, _ = local
    with (
        GuardedFetcher(allowed_private_hosts=["127.0.0.1"], max_bytes=1024 * 1024) as fetcher,
        pytest.raises(FetchError, match="sent more than 1048576 bytes"),
    ):
        fetcher.fetch(f"{base}/bomb")


def test_etag_gives_not_modified(local: tuple[str, ServerState]) -> None:
    base, state = local
    with GuardedFetcher(allowed_private_hosts=["127.0.0.1"]) as fetcher:
        first = fetcher.fetch(f"{base}/etag")
        again = fetcher.fetch(f"{base}/etag", etag=first.etag)
    assert (first.etag, first.content, first.not_modified) == (ETAG, b"tagged", False)
    assert (again.status, again.content, again.not_modified) == (304, b"", True)
    assert state.requests[1][1]["If-None-Match"] == ETAG


def test_last_modified_gives_not_modified(local: tuple[str, ServerState]) -> None:
    base, state = local
    with GuardedFetcher(allowed_private_hosts=["127.0.0.1"]) as fetcher:
        first = fetcher.fetch(f"{base}/lastmod")
        again = fetcher.fetch(f"{base}/lastmod", last_modified=first.last_modified)
    assert first.last_modified == LAST_MODIFIED
    assert again.not_modified
    assert state.requests[1][1]["If-Modified-Since"] == LAST_MODIFIED


def test_error_status_is_a_fetch_error(local: tuple[str, ServerState]) -> None:
    base, _ = local
    with (
        GuardedFetcher(allowed_private_hosts=["127.0.0.1"]) as fetcher,
        pytest.raises(FetchError, match="HTTP 404"),
    ):
        fetcher.fetch(f"{base}/missing")


def test_slow_server_times_out(local: tuple[str, ServerState]) -> None:
    base, _ = local
    with (
        GuardedFetcher(allowed_private_hosts=["127.0.0.1"], timeout_s=0.3) as fetcher,
        pytest.raises(FetchError, match=r"timed out.*limit 0.3 s"),
    ):
        fetcher.fetch(f"{base}/slow")


def test_dripping_server_hits_the_total_deadline(local: tuple[str, ServerState]) -> None:
    base, _ = local
    with (
        GuardedFetcher(allowed_private_hosts=["127.0.0.1"], timeout_s=0.4) as fetcher,
        pytest.raises(FetchError, match="timed out"),
    ):
        fetcher.fetch(f"{base}/drip")


def test_transport_guards_a_plain_httpx_client(local: tuple[str, ServerState]) -> None:
    base, _ = local
    with (
        httpx.Client(transport=GuardedTransport()) as client,
        pytest.raises(UnsafeURLError, match="loopback"),
    ):
        client.get(f"{base}/page")
    with httpx.Client(transport=GuardedTransport(allowed_private_hosts=["127.0.0.1"])) as client:
        assert client.get(f"{base}/page").status_code == 200


def self_signed(name: str) -> tuple[bytes, bytes]:
    x509 = pytest.importorskip("cryptography.x509")
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def test_tls_uses_the_name_for_sni_and_certificate_while_connecting_to_the_checked_ip(
    serve: Callable[..., tuple[str, int, ServerState]], tmp_path: Path
) -> None:
    cert_pem, key_pem = self_signed("docs.example.test")
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(cert_pem)
    key_file.write_bytes(key_pem)
    server_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_tls.load_cert_chain(cert_file, key_file)
    seen_sni: list[str | None] = []

    def record_sni(sock: ssl.SSLObject, name: str | None, context: ssl.SSLContext) -> None:
        seen_sni.append(name)

    server_tls.sni_callback = record_sni
    _, port, state = serve(tls=server_tls)
    client_tls = ssl.create_default_context(cadata=cert_pem.decode("ascii"))
    names = ["docs.example.test", "other.example.test"]
    resolver = fixed({name: ["127.0.0.1"] for name in names})
    with GuardedFetcher(allowed_private_hosts=names, resolver=resolver, ssl_context=client_tls) as fetcher:
        result = fetcher.fetch(f"https://docs.example.test:{port}/page")
        with pytest.raises(FetchError, match=r"CERTIFICATE_VERIFY_FAILED|certificate"):
            fetcher.fetch(f"https://other.example.test:{port}/page")
    assert result.content == b"# main /page\n"
    assert seen_sni[0] == "docs.example.test"
    assert state.requests[0][1]["Host"] == f"docs.example.test:{port}"
