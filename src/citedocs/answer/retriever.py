"""Where an answer's passages come from: this process's index, or any MCP server that offers a search tool.

askdocs retrieves through an MCP server; so can citedocs (`citedocs mcp` of another machine's index, or any
server whose search tool returns hits with path, heading, line span and text). The MCP session is owned by
one background task (the SDK's transports hold task groups that must be entered and left in the same task);
callers from any task share it. If the server dies, the next search reconnects once and retries.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from functools import partial
from typing import Any, Protocol, runtime_checkable

import anyio

from citedocs.answer.pages import PageFetch
from citedocs.errors import CitedocsError, FetchError, RetrievalToolError
from citedocs.hits import Hit
from citedocs.search.engine import SearchResult

__all__ = ["CITEDOCS_ARGUMENTS", "LocalRetriever", "McpRetriever", "Retriever", "Searcher", "hit_from_mcp"]

log = logging.getLogger(__name__)

# How citedocs' own MCP `search` tool names its arguments: query, top_k, mode, folder.
CITEDOCS_ARGUMENTS: Mapping[str, str] = {"query": "query", "k": "top_k", "mode": "mode", "source": "folder"}


class Retriever(Protocol):
    async def search(
        self, query: str, *, k: int | None = None, mode: str | None = None, source: str | None = None
    ) -> SearchResult: ...


class Searcher(Protocol):
    """A synchronous search over this process's index (the `Citedocs` facade is one)."""

    def search(
        self,
        query: str,
        *,
        k: int | None = None,
        mode: str | None = None,
        source: str | None = None,
        wait_for_model: bool = False,
    ) -> SearchResult: ...


@runtime_checkable
class PageSource(Protocol):
    """An index that can fetch a site page and index it (the `Citedocs` facade); returns its chunk count."""

    def fetch_site_page(self, url: str, *, embed: bool = True) -> int: ...


class LocalRetriever:
    """This process's index; SQLite is synchronous, so the search runs in a worker thread.

    `wait_for_model`: a one-off answer waits for the embedding model (hybrid retrieval) instead of starting
    its load in the background, which a server wants but a process about to exit does not."""

    def __init__(self, index: Searcher, *, wait_for_model: bool = False) -> None:
        self.index = index
        self.wait_for_model = wait_for_model

    async def search(
        self, query: str, *, k: int | None = None, mode: str | None = None, source: str | None = None
    ) -> SearchResult:
        return await anyio.to_thread.run_sync(
            partial(
                self.index.search, query, k=k, mode=mode, source=source, wait_for_model=self.wait_for_model
            )
        )

    async def fetch_pages(self, urls: Sequence[str], timeout_s: float) -> AsyncIterator[PageFetch]:
        """Fetch and index pages side by side, each outcome as it lands; a page still loading at the deadline
        is reported as such and finishes in the background (it is searchable once stored)."""
        started = time.perf_counter()
        tasks = {asyncio.ensure_future(asyncio.to_thread(self._fetch_one, url)): url for url in urls}
        pending = set(tasks)
        while pending:
            remaining = timeout_s - (time.perf_counter() - started)
            done, pending = await asyncio.wait(
                pending, timeout=max(0.0, remaining), return_when=asyncio.FIRST_COMPLETED
            )
            for task in done:
                yield task.result()
            if not done:
                break
        for task in pending:
            yield PageFetch(
                tasks[task],
                False,
                round((time.perf_counter() - started) * 1000, 1),
                error=f"still downloading after {timeout_s:g} s",
                hint="The answer goes on without it; it is searchable once it has arrived.",
            )

    def _fetch_one(self, url: str) -> PageFetch:
        started = time.perf_counter()

        def ms() -> float:
            return round((time.perf_counter() - started) * 1000, 1)

        if not isinstance(self.index, PageSource):
            return PageFetch(
                url,
                False,
                0.0,
                error="this index cannot fetch pages",
                hint="Fetch it with `citedocs fetch URL`.",
            )
        try:
            # a one-off answer (wait_for_model) exits next: its vectors are made by the next server instead
            chunks = self.index.fetch_site_page(url, embed=not self.wait_for_model)
        except CitedocsError as exc:
            return PageFetch(url, False, ms(), error=exc.message, hint=exc.hint)
        except Exception as exc:
            log.exception("fetching %s for an answer failed", url)
            return PageFetch(
                url,
                False,
                ms(),
                error=f"fetching failed ({type(exc).__name__})",
                hint="Try `citedocs fetch URL` to see the error.",
            )
        return PageFetch(url, True, ms(), chunks)


def hit_from_mcp(raw: Mapping[str, Any]) -> Hit:
    """A hit from an MCP search result; a missing `text` falls back to the snippet."""
    page = raw.get("page")
    return Hit(
        chunk_id=str(raw.get("chunk_id") or raw.get("id") or ""),
        path=str(raw.get("path") or raw.get("url") or raw.get("source") or ""),
        source=str(raw.get("source") or ""),
        heading=str(raw.get("heading") or raw.get("title") or ""),
        page=int(page) if isinstance(page, int) else None,
        line_start=int(raw.get("line_start") or 0),
        line_end=int(raw.get("line_end") or 0),
        score=float(raw.get("score") or 0.0),
        text=str(raw.get("text") or raw.get("snippet") or ""),
        snippet=str(raw.get("snippet") or ""),
        kind="link" if raw.get("kind") == "link" else "passage",
    )


class McpRetriever:
    """Search through an MCP server: `server` is a URL (streamable HTTP), a command line (stdio), or an
    in-process `MCPServer`. `arguments` maps query/k/mode/source to the tool's argument names."""

    def __init__(
        self,
        server: str | Sequence[str] | Any,
        *,
        tool: str = "search",
        arguments: Mapping[str, str] = CITEDOCS_ARGUMENTS,
        default_k: int = 5,
        timeout_s: float = 30.0,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.server = server
        self.tool = tool
        self.arguments = dict(arguments)
        self.default_k = default_k
        self.timeout_s = timeout_s
        self.env = dict(env) if env is not None else None
        self.reconnects = 0
        self._client: Any = None
        self._stop: asyncio.Event | None = None
        self._owner: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    def _target(self) -> Any:
        if isinstance(self.server, str):
            return self.server
        if isinstance(self.server, Sequence):
            from mcp import StdioServerParameters

            command = list(self.server)
            return StdioServerParameters(command=command[0], args=command[1:], env=self.env)
        return self.server

    async def _connect(self) -> Any:
        from mcp import Client

        ready: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        stop = asyncio.Event()

        async def own() -> None:
            try:
                async with Client(self._target(), read_timeout_seconds=self.timeout_s) as client:
                    ready.set_result(client)
                    await stop.wait()
            except Exception as exc:
                if not ready.done():
                    ready.set_exception(exc)
                else:
                    log.warning("the MCP retrieval session ended: %s", exc)

        self._stop, self._owner = stop, asyncio.create_task(own(), name="mcp-retriever")
        try:
            self._client = await asyncio.wait_for(asyncio.shield(ready), self.timeout_s)
        except Exception as exc:
            await self._disconnect()
            raise FetchError(
                f"Cannot connect to the MCP search server {self._shown()}: {exc}",
                "Check the command or URL, and that the server starts on its own.",
            ) from exc
        return self._client

    async def _disconnect(self) -> None:
        self._client = None
        if self._stop is not None:
            self._stop.set()
        if self._owner is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(self._owner, 5.0)
        self._stop = self._owner = None

    def _shown(self) -> str:
        return (
            self.server
            if isinstance(self.server, str)
            else " ".join(map(str, self.server))[:200]
            if isinstance(self.server, Sequence)
            else type(self.server).__name__
        )

    async def aclose(self) -> None:
        async with self._lock:
            await self._disconnect()

    async def search(
        self, query: str, *, k: int | None = None, mode: str | None = None, source: str | None = None
    ) -> SearchResult:
        values = {"query": query, "k": k or self.default_k, "mode": mode, "source": source}
        arguments = {
            self.arguments[key]: value
            for key, value in values.items()
            if value is not None and key in self.arguments
        }
        async with self._lock:
            for attempt in range(2):
                client = self._client or await self._connect()
                try:
                    result = await client.call_tool(self.tool, arguments)
                except Exception as exc:
                    await self._disconnect()
                    if attempt:
                        raise FetchError(
                            f"The MCP search server {self._shown()} failed twice: {exc}",
                            "Check that the server is running and healthy.",
                        ) from exc
                    self.reconnects += 1
                    continue
                return self._parse(query, result)
        raise AssertionError("unreachable")

    def _parse(self, query: str, result: Any) -> SearchResult:
        texts = [getattr(c, "text", "") for c in getattr(result, "content", None) or []]
        if getattr(result, "is_error", False) or getattr(result, "isError", False):
            raise RetrievalToolError(
                f"The MCP search tool failed: {' '.join(texts)[:300]}",
                "Check the question and the search arguments.",
            )
        data = getattr(result, "structured_content", None) or getattr(result, "structuredContent", None)
        if data is None and texts:
            with contextlib.suppress(json.JSONDecodeError):
                data = json.loads(texts[0])
        hits = data.get("hits") if isinstance(data, dict) else data
        if not isinstance(hits, list):
            raise RetrievalToolError(
                "The MCP search tool returned no list of hits.",
                "Use a server whose search tool returns structured hits.",
            )
        mode = str(data.get("mode", "")) if isinstance(data, dict) else ""
        note = data.get("note") if isinstance(data, dict) else None
        return SearchResult(query, mode, [hit_from_mcp(h) for h in hits if isinstance(h, dict)], note)
