"""A scripted OpenAI-compatible server on a real socket, for tests of anything that calls an LLM.

Usage::

    from fakes.openai_server import FakeOpenAI, Reply

    with FakeOpenAI([Reply.error(500), Reply(tokens=["Hello", " world", "."])]) as server:
        client = LLMClient(server.base_url, "fake", api_key="sk-test")   # base_url ends in /v1
        ...
        server.requests[0].body          # the JSON the client sent (dict)
        server.requests[0].headers       # lower-case header names
        server.wait_finished(1)          # blocks until request 1 completed or its client went away
        server.requests[1].disconnected  # True if the client closed before the response ended

Each POST to `/v1/chat/completions` (or `/chat/completions`) takes the next `Reply` from the script; when
the script runs out, `default` is used (or `responder(request) -> Reply`, which sees the recorded request and
can build an answer from the prompt). `"stream": true` requests get server-sent events like llama.cpp's
(`data: {...}` chunks, a usage chunk, `data: [DONE]`); others get one JSON completion. A `Reply` can also
fail: `status` (with `retry_after`), `stall_after` k tokens (sends nothing more until the client leaves),
`abort_after` k tokens (drops the socket), `error_after` k tokens (an `{"error": ...}` chunk),
`malformed_after` k tokens (a chunk that is not JSON), `send_done=False` (ends cleanly without `[DONE]`),
`finish_reason=None` or `"length"`, `usage=None` (no usage chunk); `timings` adds llama.cpp's timings object. `GET /v1/models` lists `model`;
`GET /health` answers `{"status": "ok"}`.

The server runs its own asyncio loop in a background thread, answers with `Connection: close`, and watches
each connection for EOF while it streams, so a client that cancels is seen at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Reply:
    tokens: Sequence[str] = ("Hello", " world", ".")
    delay_s: float = 0.0
    first_delay_s: float = 0.0
    finish_reason: str | None = "stop"
    usage: dict[str, int] | str | None = "auto"
    status: int = 200
    body: str | None = None
    retry_after: str | None = None
    stall_after: int | None = None
    abort_after: int | None = None
    error_after: int | None = None
    malformed_after: int | None = None
    send_done: bool = True
    # llama.cpp's `timings` object (prompt_n, cache_n, ...), sent on the last chunk like llama-server does
    timings: dict[str, float] | None = None

    @classmethod
    def error(cls, status: int, message: str = "scripted failure", retry_after: str | None = None) -> Reply:
        body = json.dumps({"error": {"message": message, "type": "server_error", "code": status}})
        return cls(status=status, body=body, retry_after=retry_after)


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    raw_body: bytes
    body: Any = None
    tokens_sent: int = 0
    completed: bool = False
    disconnected: bool = False
    finished: threading.Event = field(default_factory=threading.Event, repr=False)


class FakeOpenAI:
    """Context manager: starts on 127.0.0.1 on an ephemeral port; `base_url` is `http://127.0.0.1:PORT/v1`."""

    def __init__(
        self,
        script: Sequence[Reply] = (),
        *,
        default: Reply | None = None,
        responder: Callable[[RecordedRequest], Reply] | None = None,
        model: str = "fake-model",
        stall_limit_s: float = 30.0,
        port: int = 0,
    ) -> None:
        self._script = list(script)
        self._default = default or Reply()
        self._responder = responder
        self.model = model
        self.stall_limit_s = stall_limit_s
        self.requests: list[RecordedRequest] = []
        self.port = port  # 0: an ephemeral one
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stopping: asyncio.Event | None = None
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def add(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def wait_finished(self, index: int, timeout: float = 5.0) -> RecordedRequest:
        """Block until chat request `index` completed or its client disconnected."""
        deadline = time.monotonic() + timeout
        while len(self.chat_requests) <= index:
            if time.monotonic() > deadline:
                raise TimeoutError(f"request {index} never arrived")
            time.sleep(0.005)
        request = self.chat_requests[index]
        if not request.finished.wait(max(0.0, deadline - time.monotonic())):
            raise TimeoutError(f"request {index} did not finish within {timeout} s")
        return request

    def __enter__(self) -> FakeOpenAI:
        self._thread = threading.Thread(target=self._run, name="fake-openai", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("fake OpenAI server did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)
        if self._thread is not None:
            self._thread.join(10)

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        await self._stopping.wait()
        self._server.close()
        for task in asyncio.all_tasks():
            if task is not asyncio.current_task():
                task.cancel()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._server.wait_closed(), 2)

    def _next_reply(self, request: RecordedRequest) -> Reply:
        with self._lock:
            if self._script:
                return self._script.pop(0)
        return self._responder(request) if self._responder else self._default

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request: RecordedRequest | None = None
        try:
            request = await _read_request(reader)
            if request is None:
                return
            self.requests.append(request)
            if request.method == "GET" and request.path in ("/health", "/v1/health"):
                await _send_json(writer, 200, {"status": "ok"})
            elif request.method == "GET" and request.path.endswith("/models"):
                await _send_json(
                    writer, 200, {"object": "list", "data": [{"id": self.model, "object": "model"}]}
                )
            elif request.method == "POST" and request.path.endswith("/chat/completions"):
                await self._chat(request, reader, writer)
            else:
                await _send_json(writer, 404, {"error": {"message": f"no route {request.path}"}})
        except (ConnectionError, asyncio.IncompleteReadError):
            if request is not None:
                request.disconnected = not request.completed
        finally:
            if request is not None:
                request.finished.set()
            with contextlib.suppress(Exception):
                writer.close()

    async def _chat(
        self, request: RecordedRequest, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        reply = self._next_reply(request)
        if reply.status != 200:
            headers = {"Retry-After": reply.retry_after} if reply.retry_after is not None else {}
            await _send_raw(writer, reply.status, reply.body or "", "application/json", headers)
            request.completed = True
            return
        if not (isinstance(request.body, dict) and request.body.get("stream")):
            await self._complete_json(request, reply, writer)
            return
        gone = asyncio.Event()
        watcher = asyncio.create_task(_watch_eof(reader, gone))
        try:
            await self._stream(request, reply, writer, gone)
        finally:
            watcher.cancel()
        if gone.is_set() and not request.completed:
            request.disconnected = True

    async def _complete_json(
        self, request: RecordedRequest, reply: Reply, writer: asyncio.StreamWriter
    ) -> None:
        if reply.first_delay_s:  # a model that takes its time before answering at all
            await asyncio.sleep(reply.first_delay_s)
        text = "".join(reply.tokens)
        payload: dict[str, Any] = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": reply.finish_reason,
                }
            ],
        }
        usage = _usage(reply, request)
        if usage is not None:
            payload["usage"] = usage
        await _send_json(writer, 200, payload)
        request.tokens_sent = len(reply.tokens)
        request.completed = True

    async def _stream(
        self, request: RecordedRequest, reply: Reply, writer: asyncio.StreamWriter, gone: asyncio.Event
    ) -> None:
        head = (
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
            "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        )
        writer.write(head.encode())
        await writer.drain()

        async def send(data: str) -> None:
            raw = data.encode()
            writer.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")
            await writer.drain()

        def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
            body = {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "model": self.model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            return f"data: {json.dumps(body)}\n\n"

        async def pause(seconds: float) -> bool:
            """Wait; False if the client went away meanwhile."""
            if seconds > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(gone.wait(), seconds)
            return not gone.is_set()

        await send(chunk({"role": "assistant", "content": ""}))
        for i, token in enumerate(reply.tokens):
            if i == reply.stall_after:
                await pause(self.stall_limit_s)
                return
            if i == reply.abort_after:
                writer.transport.abort()
                return
            if i == reply.error_after:
                failure = {"error": {"message": "scripted mid-stream failure", "code": 500}}
                await send(f"data: {json.dumps(failure)}\n\n")
                await send("")
                request.completed = True
                return
            if i == reply.malformed_after:
                await send('data: {"choices": [{"delta": {"content": "x"\n\n')
            if not await pause(reply.first_delay_s if i == 0 else reply.delay_s):
                return
            await send(chunk({"content": token}))
            request.tokens_sent += 1
        if reply.abort_after is not None and reply.abort_after >= len(reply.tokens):
            writer.transport.abort()
            return
        if reply.finish_reason is not None:
            await send(chunk({}, reply.finish_reason))
        usage = _usage(reply, request)
        if usage is not None:
            body = {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "model": self.model,
                "choices": [],
                "usage": usage,
            }
            if reply.timings is not None:
                body["timings"] = reply.timings
            await send(f"data: {json.dumps(body)}\n\n")
        if reply.send_done:
            await send("data: [DONE]\n\n")
        await send("")
        request.completed = True


def _usage(reply: Reply, request: RecordedRequest) -> dict[str, int] | None:
    if reply.usage is None or isinstance(reply.usage, dict):
        return reply.usage
    prompt = len(request.raw_body) // 4
    return {
        "prompt_tokens": prompt,
        "completion_tokens": len(reply.tokens),
        "total_tokens": prompt + len(reply.tokens),
    }


async def _watch_eof(reader: asyncio.StreamReader, gone: asyncio.Event) -> None:
    with contextlib.suppress(ConnectionError):
        while await reader.read(1024):
            pass
    gone.set()


async def _read_request(reader: asyncio.StreamReader) -> RecordedRequest | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    raw = await reader.readexactly(int(headers.get("content-length", "0")))
    request = RecordedRequest(method, path.split("?", 1)[0], headers, raw)
    with contextlib.suppress(ValueError):
        request.body = json.loads(raw) if raw else None
    return request


async def _send_raw(
    writer: asyncio.StreamWriter,
    status: int,
    body: str,
    content_type: str,
    headers: dict[str, str] | None = None,
) -> None:
    raw = body.encode()
    extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
    writer.write(
        f"HTTP/1.1 {status} Status\r\nContent-Type: {content_type}\r\nContent-Length: {len(raw)}\r\n"
        f"{extra}Connection: close\r\n\r\n".encode()
        + raw
    )
    await writer.drain()


async def _send_json(writer: asyncio.StreamWriter, status: int, payload: Any) -> None:
    await _send_raw(writer, status, json.dumps(payload), "application/json")
