"""One exception tree: every message a user can see says what to do next."""

from __future__ import annotations


class CitedocsError(Exception):
    """Root of every error citedocs raises on purpose."""

    hint: str = ""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint or self.hint

    def __str__(self) -> str:
        return f"{self.message} {self.hint}".strip()


class ConfigError(CitedocsError):
    """A setting is missing or contradictory."""


class StoreError(CitedocsError):
    """The index database cannot be opened or is inconsistent."""


class NotFoundError(CitedocsError):
    """A folder, site, document or chunk that is not registered or indexed."""


class AccessDenied(CitedocsError):
    """A path or URL outside what the user registered."""


class ParseError(CitedocsError):
    """A file could not be turned into text; indexing records it and goes on."""


class FetchError(CitedocsError):
    """A remote page could not be fetched (network, size, status)."""


class UnsafeURLError(FetchError, AccessDenied):
    """A URL refused by the SSRF guard."""


class EmbedderError(CitedocsError):
    """The embedding model is unavailable or does not match the index."""


class ModelMismatchError(EmbedderError):
    """The index was embedded with another model."""


class LLMError(CitedocsError):
    """The language model endpoint failed."""


class InputError(CitedocsError):
    """A request or argument is malformed."""
