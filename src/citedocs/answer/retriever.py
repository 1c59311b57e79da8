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
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, Protocol

import anyio

from citedocs.errors import FetchError, RetrievalToolError
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
        return self.server if isinstance(self.server, str) else " ".join(map(str, self.server))[:200] \
            if isinstance(self.server, Sequence) else type(self.server).__name__  # fmt: skip

    async def aclose(self) -> None:
        async with self._lock:
            await self._disconnect()

    async def search(
        self, query: str, *, k: int | None = None, mode: str | None = None, source: str | None = None
    ) -> SearchResult:
        values = {"query": query, "k": k or self.default_k, "mode": mode, "source": source}
        arguments = {self.arguments[key]: value for key, value in values.items()
                     if value is not None and key in self.arguments}  # fmt: skip
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
            raise RetrievalToolError(f"The MCP search tool failed: {' '.join(texts)[:300]}",
                                     "Check the question and the search arguments.")  # fmt: skip
        data = getattr(result, "structured_content", None) or getattr(result, "structuredContent", None)
        if data is None and texts:
            with contextlib.suppress(json.JSONDecodeError):
                data = json.loads(texts[0])
        hits = data.get("hits") if isinstance(data, dict) else data
        if not isinstance(hits, list):
            raise RetrievalToolError("The MCP search tool returned no list of hits.",
                                     "Use a server whose search tool returns structured hits.")  # fmt: skip
        mode = str(data.get("mode", "")) if isinstance(data, dict) else ""
        note = data.get("note") if isinstance(data, dict) else None
        return SearchResult(query, mode, [hit_from_mcp(h) for h in hits if isinstance(h, dict)], note)
