"""Whether answers can run with what is configured and installed: the one verdict `status`, `model list`, the
page and MCP's tool list read.

Apart from llm/model.py (which starts and talks to models: httpx, asyncio) so that `citedocs mcp` can answer
its handshake, which says whether `ask` is offered, without importing any of it.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from citedocs.llm.install import chosen_model, installed_models, server_binary
from citedocs.settings import Settings

__all__ = ["INSTALL_STEP", "NONE_STEP", "Readiness", "readiness", "split_urls"]


def split_urls(value: str) -> list[str]:
    """The endpoint URLs in an `llm_base_url` setting: one URL, or several separated by commas."""
    return [part.strip() for part in value.split(",") if part.strip()]


INSTALL_STEP = (
    "Run `citedocs model install` (a local model and a prebuilt server, a few minutes the first time)"
)
NONE_STEP = (
    f"{INSTALL_STEP}, or set CITEDOCS_LLM_BASE_URL to an OpenAI-compatible server, or CITEDOCS_LLM_GGUF "
    "to a GGUF file."
)


@dataclass(frozen=True, slots=True)
class Readiness:
    """Whether answers can run with what is configured and installed, and if not why and the one step that
    makes them run. `status`, `model list`, the page and MCP's tool list all read this one value."""

    can_answer: bool
    problem: str | None = None
    next_step: str | None = None


def _no_server(binary: str) -> Readiness | None:
    if shutil.which(binary) is not None:
        return None
    return Readiness(
        False,
        f"There is no llama.cpp server to run the model ({binary!r} is not an executable).",
        f"{INSTALL_STEP}; it installs a prebuilt server, or set CITEDOCS_LLM_SERVER to one.",
    )


def readiness(settings: Settings) -> Readiness:
    """Checked from the settings and files alone (a stat or two): starts nothing, opens no connection. A
    remote endpoint counts as able to answer; whether it is up is the page's and /healthz's question."""
    if split_urls(settings.llm_base_url):
        return Readiness(True)
    if settings.llm_gguf:
        if not Path(settings.llm_gguf).expanduser().is_file():
            return Readiness(
                False,
                f"CITEDOCS_LLM_GGUF names {settings.llm_gguf}, which is not a file.",
                "Point CITEDOCS_LLM_GGUF at a GGUF file, or unset it and run `citedocs model install`.",
            )
        return _no_server(server_binary(settings)) or Readiness(True)
    installed = chosen_model(settings)
    if installed is not None:
        return _no_server(server_binary(settings)) or Readiness(True)
    if settings.llm_local_model or installed_models(settings):
        name = settings.llm_local_model or "the installed model"
        return Readiness(
            False,
            f"{name} is not installed as it was checked (missing, or changed on disk).",
            f"Run `citedocs model install{' --model ' + settings.llm_local_model if settings.llm_local_model else ''}` to check it again.",
        )
    return Readiness(
        False, "No language model is configured, so questions cannot be answered (search works).", NONE_STEP
    )
