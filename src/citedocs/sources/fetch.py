"""The one HTTP client for remote docs: every hop re-checked, addresses pinned at connect time, bodies capped.

httpcore connects through `GuardedBackend`, which resolves the host itself, checks every address and connects
to a checked one, so a DNS answer that changes between check and connect (rebinding) cannot reach a private
address. The URL keeps the host name, so the Host header, TLS SNI and certificate checks use the name, and
pooled keep-alive connections are only ever reused for the origin they were checked for.
"""

from __future__ import annotations

import functools
import http.cookiejar
import ssl
import time
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

import httpcore
import httpx

from citedocs.errors import FetchError, UnsafeURLError
from citedocs.sources.ssrf import (
    ParsedURL,
    Resolver,
    check_url,
    resolve_checked,
    site_prefix,
    system_resolver,
    within_prefix,
)

if TYPE_CHECKING:
    from citedocs.settings import Settings

__all__ = [
    "FETCH_MAX_BYTES",
    "FETCH_TIMEOUT_S",
    "FetchResult",
    "GuardedBackend",
    "GuardedFetcher",
    "GuardedTransport",
]

FETCH_MAX_BYTES = 10 * 1024 * 1024  # a larger page is refused
FETCH_TIMEOUT_S = 20.0  # one page, redirects included

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
SAFE_ENCODINGS = frozenset({"", "identity", "gzip", "x-gzip", "deflate"})
TRANSPORT_ERRORS = (httpcore.TimeoutException, httpcore.NetworkError, httpcore.ProtocolError, httpx.HTTPError)


@dataclass(frozen=True, slots=True)
class FetchResult:
    """One fetched page; `not_modified` means the cached copy (etag / last_modified) is still current."""

    url: str
    status: int
    content: bytes
    content_type: str
    etag: str | None
    last_modified: str | None
    not_modified: bool = False

    @property
    def charset(self) -> str:
        for param in self.content_type.split(";")[1:]:
            key, _, value = param.partition("=")
            if key.strip().lower() == "charset" and value.strip():
                return value.strip().strip('"')
        return "utf-8"

    def text(self) -> str:
        try:
            return self.content.decode(self.charset, errors="replace")
        except LookupError:
            return self.content.decode("utf-8", errors="replace")


@functools.cache
def default_ssl_context() -> ssl.SSLContext:
    """certifi's roots, loaded once (about 0.1 s) and shared; SSLContext is safe to share between threads."""
    return httpx.create_ssl_context()


class GuardedBackend(httpcore.NetworkBackend):
    """Resolves and checks at connect time, then connects to the checked address (never re-resolving)."""

    def __init__(self, resolver: Resolver, allowed_private_hosts: Collection[str]) -> None:
        self._resolver = resolver
        self._allowed = tuple(allowed_private_hosts)
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        addresses = resolve_checked(host, port, self._resolver, self._allowed)
        failure: Exception | None = None
        for address in addresses:
            try:
                return self._inner.connect_tcp(address, port, timeout, local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None
        raise failure

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        raise UnsafeURLError("refused: unix sockets are never fetched.", "Use an http(s) URL.")

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class _ResponseStream(httpx.SyncByteStream):
    def __init__(self, stream: Iterable[bytes]) -> None:
        self._stream = stream

    def __iter__(self) -> Iterator[bytes]:
        yield from self._stream

    def close(self) -> None:
        close = getattr(self._stream, "close", None)
        if close is not None:
            close()


class GuardedTransport(httpx.BaseTransport):
    """An httpx transport whose every connection goes through `GuardedBackend`; usable with httpx.Client."""

    def __init__(
        self,
        *,
        allowed_private_hosts: Collection[str] = (),
        resolver: Resolver | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl_context or default_ssl_context(),
            max_connections=50,
            max_keepalive_connections=10,
            keepalive_expiry=5.0,
            network_backend=GuardedBackend(resolver or system_resolver, allowed_private_hosts),
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.SyncByteStream)
        url = httpcore.URL(
            scheme=request.url.raw_scheme,
            host=request.url.raw_host,
            port=request.url.port,
            target=request.url.raw_path,
        )
        core_request = httpcore.Request(
            request.method,
            url,
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        response = self._pool.handle_request(core_request)
        assert isinstance(response.stream, Iterable)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_ResponseStream(response.stream),
            extensions=response.extensions,
        )

    def close(self) -> None:
        self._pool.close()


class GuardedFetcher:
    """GET with the SSRF guard on every hop, manual redirects, a total deadline and a streamed size cap."""

    def __init__(
        self,
        *,
        allowed_private_hosts: Collection[str] = (),
        max_bytes: int = FETCH_MAX_BYTES,
        timeout_s: float = FETCH_TIMEOUT_S,
        connect_timeout_s: float = 10.0,
        max_redirects: int = 5,
        resolver: Resolver | None = None,
        user_agent: str = "citedocs/0.1",
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.allowed_private_hosts = tuple(allowed_private_hosts)
        self.max_bytes = max_bytes
        self.timeout_s = timeout_s
        self.connect_timeout_s = connect_timeout_s
        self.max_redirects = max_redirects
        self.user_agent = user_agent
        self._transport = GuardedTransport(
            allowed_private_hosts=self.allowed_private_hosts, resolver=resolver, ssl_context=ssl_context
        )
        # No cookies: one site's session must never ride along to another fetch.
        self._client = httpx.Client(
            transport=self._transport,
            follow_redirects=False,
            trust_env=False,
            cookies=http.cookiejar.CookieJar(http.cookiejar.DefaultCookiePolicy(allowed_domains=[])),
        )

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> GuardedFetcher:
        options: dict[str, Any] = {"allowed_private_hosts": settings.allowed_private_hosts}
        return cls(**(options | overrides))

    def fetch(
        self,
        url: str,
        *,
        etag: str | None = None,
        last_modified: str | None = None,
        confine_to: str | None = None,
    ) -> FetchResult:
        """GET `url`; `confine_to` (a site's llms.txt URL) bounds every hop to its origin and directory."""
        deadline = time.monotonic() + self.timeout_s
        headers = {"User-Agent": self.user_agent, "Accept": "*/*", "Accept-Encoding": "gzip, deflate"}
        if etag:
            headers["If-None-Match"] = etag
        if last_modified:
            headers["If-Modified-Since"] = last_modified
        target = check_url(url, self.allowed_private_hosts)
        for _hop in range(self.max_redirects + 1):
            if confine_to is not None and not within_prefix(target.url, confine_to):
                area = site_prefix(confine_to)
                raise UnsafeURLError(
                    f"refused: {target.url} is outside {area}, the area this site is confined to.",
                    "Add the other location as its own site if you want it indexed.",
                )
            response = self._send(target, headers, deadline)
            try:
                location = response.headers.get("Location")
                if response.status_code in REDIRECT_STATUSES and location:
                    target = check_url(urljoin(target.url, location), self.allowed_private_hosts)
                    continue
                return self._finish(target, response, deadline)
            finally:
                response.close()
        raise FetchError(
            f"{url} redirected more than {self.max_redirects} times.",
            "The site has a redirect loop; open it in a browser to find the final URL and use that.",
        )

    def _send(self, target: ParsedURL, headers: dict[str, str], deadline: float) -> httpx.Response:
        remaining = self._remaining(target, deadline)
        timeout = httpx.Timeout(remaining, connect=min(self.connect_timeout_s, remaining))
        request = self._client.build_request("GET", target.url, headers=headers, timeout=timeout)
        try:
            return self._client.send(request, stream=True)
        except TRANSPORT_ERRORS as exc:
            raise self._transport_error(target, exc) from exc

    def _finish(self, target: ParsedURL, response: httpx.Response, deadline: float) -> FetchResult:
        status = response.status_code
        if status == 304:
            return self._result(target, response, b"", not_modified=True)
        if not 200 <= status < 300:
            raise FetchError(
                f"{target.url} answered HTTP {status} {response.reason_phrase}.",
                "Check that the URL is right and the site is up, then try again.",
            )
        encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding not in SAFE_ENCODINGS:
            raise FetchError(
                f"{target.url} sent Content-Encoding {encoding!r}, which citedocs does not accept.",
                "Only gzip and deflate are decoded; ask the site owner or use another URL.",
            )
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            raise self._too_big(target, f"announces {int(declared)} bytes")
        body = bytearray()
        try:
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > self.max_bytes:
                    raise self._too_big(target, f"sent more than {self.max_bytes} bytes")
                self._remaining(target, deadline)
        except TRANSPORT_ERRORS as exc:
            raise self._transport_error(target, exc) from exc
        return self._result(target, response, bytes(body), not_modified=False)

    @staticmethod
    def _result(
        target: ParsedURL, response: httpx.Response, body: bytes, *, not_modified: bool
    ) -> FetchResult:
        return FetchResult(
            url=target.url,
            status=response.status_code,
            content=body,
            content_type=response.headers.get("Content-Type", ""),
            etag=response.headers.get("ETag"),
            last_modified=response.headers.get("Last-Modified"),
            not_modified=not_modified,
        )

    def _remaining(self, target: ParsedURL, deadline: float) -> float:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise self._timed_out(target)
        return remaining

    def _timed_out(self, target: ParsedURL) -> FetchError:
        return FetchError(
            f"timed out fetching {target.url} (limit {self.timeout_s:g} s).",
            "The site is slow or unreachable; try again later.",
        )

    def _too_big(self, target: ParsedURL, what: str) -> FetchError:
        return FetchError(
            f"{target.url} {what}; the limit is {self.max_bytes} bytes, so the download was stopped.",
            "Save the page and add its folder instead (`citedocs add FOLDER`) if it is really that large.",
        )

    def _transport_error(self, target: ParsedURL, exc: Exception) -> FetchError:
        if isinstance(exc, httpcore.TimeoutException | httpx.TimeoutException):
            return self._timed_out(target)
        return FetchError(
            f"could not fetch {target.url}: {type(exc).__name__}: {exc}.",
            "Check the URL and your network connection, then try again.",
        )

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> GuardedFetcher:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
