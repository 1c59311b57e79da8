"""Where the API's language model comes from, and whether it can answer now.

Four cases, in this order: a client passed in (tests, embedding apps) or `llm_base_url` (an external
OpenAI-compatible server, or an `LLMPool` of them when it lists several URLs), a llama.cpp server started for
`llm_gguf` (in the background, so the API and keyword search are up while the model loads), the same for a model
that `citedocs model install` installed, or none at all (search works, answers that pass the gate get 503 with
a hint).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from citedocs.llm.chat import ChatModel
from citedocs.llm.client import LLMClient
from citedocs.llm.install import DEFAULT_SERVER, better_server, chosen_model, server_binary, server_kind
from citedocs.llm.llama import LlamaServer
from citedocs.llm.native import build_state, note
from citedocs.llm.pool import LLMPool
from citedocs.llm.readiness import NONE_STEP, Readiness, readiness, split_urls
from citedocs.llm.wire import redact_url
from citedocs.settings import Settings

__all__ = ["ModelHandle", "Readiness", "configured_llm", "readiness"]

log = logging.getLogger(__name__)

UPGRADE_CHECK_S = 2.0  # how often a running handle looks for a better llama-server (a stat or two)


def configured_llm(settings: Settings) -> dict[str, Any]:
    """Which model `from_settings` would answer with (the same order: URLs, then a GGUF), described from the
    settings alone, so `status` starts no model server and opens no connection; `can_answer`, `problem` and
    `next_step` are `readiness`."""
    ready = readiness(settings)
    verdict = {"can_answer": ready.can_answer, "problem": ready.problem, "next_step": ready.next_step}
    urls = split_urls(settings.llm_base_url)
    if urls:
        return {
            "configured": True,
            "kind": "external",
            "model": settings.llm_model,
            "base_url": ",".join(redact_url(url) for url in urls),
            **verdict,
        }
    if settings.llm_gguf:
        return {
            "configured": True,
            "kind": "gguf",
            "model": settings.llm_model,
            "gguf": settings.llm_gguf,
            "llama_server": server_binary(settings),
            **verdict,
        }
    installed = chosen_model(settings)
    if installed is not None:
        binary = server_binary(settings)
        building = build_state(settings)
        return {
            "configured": True,
            "kind": "installed",
            "model": installed.name,
            "gguf": installed.path,
            "llama_server": binary,
            "server_kind": server_kind(settings, binary),
            "building": None if building is None else building.to_dict(),
            "license": installed.license,
            **verdict,
        }
    return {"configured": False, "kind": "none", "model": None, **verdict}


class ModelHandle:
    def __init__(
        self,
        settings: Settings,
        client: ChatModel | None = None,
        server: LlamaServer | None = None,
        *,
        owns_client: bool = False,
    ) -> None:
        self.settings = settings
        self.client = client
        self.server = server
        self._owns_client = owns_client
        self._starting: asyncio.Task[None] | None = None
        self.error = ""
        self.name = ""  # an installed model's catalogue name, when it is what answers
        self.blocked: Readiness | None = None  # why answers cannot run with these settings (`readiness`)
        # the settings the llama-server was chosen from (`server_binary`), so a better one can replace it
        self.origin: Settings | None = None
        self._on_ready: Callable[[LLMClient], None] = lambda _client: None
        self._watching: asyncio.Task[None] | None = None
        self._retiring: list[tuple[LlamaServer, LLMClient]] = []
        self._refused = ""  # a better server that failed to start: not tried again by this process

    @classmethod
    def from_settings(cls, settings: Settings, llm: ChatModel | None = None) -> ModelHandle:
        if llm is not None:
            return cls(settings, llm)
        urls = split_urls(settings.llm_base_url)
        if len(urls) > 1:
            return cls(settings, LLMPool.from_settings(settings), owns_client=True)
        if urls:
            one = settings.model_copy(update={"llm_base_url": urls[0]})
            return cls(settings, LLMClient.from_settings(one), owns_client=True)
        ready = readiness(settings)
        if not ready.can_answer:
            handle = cls(settings)
            handle.blocked = ready
            return handle
        if settings.llm_gguf:
            local = settings.model_copy(update={"llm_server": server_binary(settings)})
            handle = cls(local, server=LlamaServer.from_settings(local), owns_client=True)
            handle.origin = settings if settings.llm_server == DEFAULT_SERVER else None
            return handle
        installed = chosen_model(settings)
        if installed is not None:
            local = settings.model_copy(
                update={
                    "llm_gguf": installed.path,
                    "llm_server": server_binary(settings),
                    "llm_model": installed.name,
                }
            )
            handle = cls(local, server=LlamaServer.from_settings(local), owns_client=True)
            handle.name = installed.name
            handle.origin = settings if settings.llm_server == DEFAULT_SERVER else None
            return handle
        return cls(settings)

    async def start(self, on_ready: Callable[[LLMClient], None]) -> None:
        """Start the local server in the background; `on_ready` gets the client once it answers, and again
        whenever a better server (a native build) has replaced it."""
        if self.server is None or self._starting is not None:
            return
        server = self.server
        self._on_ready = on_ready

        async def run() -> None:
            try:
                await server.start()
            except Exception as exc:
                self.error = str(exc)
                log.error("the local model server did not start: %s", exc)
                return
            local = self.settings.model_copy(update={"llm_base_url": server.base_url})
            client = LLMClient.from_settings(local, llama_cpp=True)
            self.client = client
            on_ready(client)
            if self.origin is not None:
                self._watching = asyncio.create_task(self._watch(), name="llama-upgrade")

        self._starting = asyncio.create_task(run(), name="llama-start")

    async def _watch(self) -> None:
        """Move to a better llama-server (`better_server`) when one appears, for as long as one can."""
        assert self.origin is not None and self.server is not None
        while server_kind(self.origin, self.server.binary) != "native":
            await asyncio.sleep(UPGRADE_CHECK_S)
            better = better_server(self.origin, self.server.binary)
            if better is not None and better != self._refused:
                await self._swap(better)

    async def _swap(self, binary: str) -> None:
        """Start `binary` beside the running server, send new answers to it once it is ready, and stop the old
        one when its answers in flight have ended: no answer is dropped."""
        assert self.origin is not None and self.server is not None and isinstance(self.client, LLMClient)
        kind, old_kind = server_kind(self.origin, binary), server_kind(self.origin, self.server.binary)
        local = self.settings.model_copy(update={"llm_server": binary})
        server = LlamaServer.from_settings(local)
        try:
            await server.start()
        except Exception as exc:
            self._refused = binary
            log.error(
                "the %s llama-server did not start, the %s one keeps answering: %s", kind, old_kind, exc
            )
            return
        client = LLMClient.from_settings(
            local.model_copy(update={"llm_base_url": server.base_url}), llama_cpp=True
        )
        old = (self.server, self.client)
        self._retiring.append(old)
        self.settings, self.server, self.client = local, server, client
        self._on_ready(client)
        note(
            f"answers now go to the {kind} llama-server ({binary}); the {old_kind} one stops after its "
            f"{old[1].in_flight} answer(s) in flight"
        )
        await old[1].drained()
        await old[0].stop()
        await old[1].aclose()
        self._retiring.remove(old)

    async def stop(self) -> None:
        if self._starting is not None and not self._starting.done():
            self._starting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._starting
        if self._watching is not None:
            self._watching.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watching
        for server, client in self._retiring:
            await server.stop()
            await client.aclose()
        if self.server is not None:
            await self.server.stop()
        if self.client is not None and self._owns_client:
            await self.client.aclose()

    @property
    def state(self) -> str:
        if self.server is not None:
            return "failed" if self.error and self.server.state != "ready" else self.server.state
        return "external" if self.client is not None else "none"

    def unavailable(self) -> tuple[int, str, str] | None:
        """None when an answer can be generated now; else (status, message, hint)."""
        state = self.state
        if isinstance(self.client, LLMPool) and (down := self.client.all_down_error()) is not None:
            return (503, down.message, down.hint)
        if state in ("ready", "external") and self.client is not None:
            return None
        if state == "none":
            blocked = self.blocked or readiness(self.settings)
            return (503, blocked.problem or "No language model can answer.", blocked.next_step or NONE_STEP)
        if state in ("starting", "restarting", "stopped"):
            return (503, f"The local model server is {state}.", "Retry in a few seconds.")
        hint = (
            f"Run `citedocs model install --model {self.name}` to check the model and server again, then "
            "restart."
            if self.name
            else "Check CITEDOCS_LLM_GGUF and CITEDOCS_LLM_SERVER, then restart the server."
        )
        return (
            503,
            f"The local model server failed: {self.error or self.describe().get('last_error')}",
            hint,
        )

    def label(self) -> str | None:
        """Which model answers, in a few words a page can show (None when there is none)."""
        if self.name:
            return self.name
        if self.server is not None:
            return self.server.gguf.name
        if self.client is None:
            return None
        return f"{self.client.model} at " + ",".join(
            redact_url(url) for url in split_urls(self.client.base_url)
        )

    def describe(self) -> dict[str, Any]:
        data: dict[str, Any] = {"state": self.state, "name": self.label()}
        if self.client is not None:
            data["base_url"] = ",".join(redact_url(url) for url in split_urls(self.client.base_url))
            data["model"] = self.client.model
        if isinstance(self.client, LLMPool):
            data["endpoints"] = self.client.describe()
        if self.server is not None:
            data["server"] = self.server.describe()
            if self.origin is not None:
                data["server_kind"] = server_kind(self.origin, self.server.binary)
                if data["server_kind"] != "native" and (building := build_state(self.origin)) is not None:
                    data["building"] = building.to_dict()
        if self.error:
            data["error"] = self.error
        return data
