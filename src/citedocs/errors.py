"""One exception tree: every message a user can see says what to do next.

Each front end maps these classes once (HTTP status in `api/errors.py`, exit code in `cli/common.py`, MCP tool
errors in `mcp/shapes.py`); `tests/test_errors.py` checks that every class has both a status and a code.

    CitedocsError                     what to do is in `.hint`
    ├── ConfigError                   a setting is missing or contradictory
    ├── StoreError                    the index cannot be opened or is inconsistent
    ├── NotFoundError                 not registered, not indexed
    │   └── NoIndexError              a read-only command found no index (it creates none)
    ├── AccessDenied                  outside what the user registered
    │   ├── UnsafeURLError            (also a FetchError) refused by the SSRF guard
    │   └── PermissionDenied          a token whose scope does not cover the request
    ├── AuthRequired                  no token, or one that is unknown, expired or revoked
    ├── RateLimited                   a token asked for more answers than its rate allows
    ├── ParseError                    a file could not be turned into text
    ├── FetchError                    a remote page could not be fetched
    │   └── UnsafeURLError
    ├── EmbedderError                 the embedding model is unavailable
    │   └── ModelMismatchError        the index was embedded with another model
    ├── LLMError                      the language model endpoint failed
    │   ├── LLMStreamError            one model call failed (`partial`: tokens were already sent)
    │   └── AnswerFailed              an answer that ended in an `error` event
    ├── RetrievalToolError            an MCP search server reported an error
    └── InputError                    a request or argument is malformed
"""

from __future__ import annotations

from typing import Any


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


class NoIndexError(NotFoundError):
    """A read-only command (search, ask, read, status, list) found no index where it looked; it creates none."""


class AccessDenied(CitedocsError):
    """A path or URL outside what the user registered."""


class PermissionDenied(AccessDenied):
    """A token whose scope does not cover the request (search, ask or admin)."""


class AuthRequired(CitedocsError):
    """A shared server was asked without a valid token."""


class RateLimited(CitedocsError):
    """Too many answers for one token; `retry_after_s` says when to try again."""

    def __init__(self, message: str, hint: str = "", *, retry_after_s: int = 1) -> None:
        super().__init__(message, hint)
        self.retry_after_s = retry_after_s


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


class LLMStreamError(LLMError):
    """A model call that failed; `partial` tells whether tokens had already been yielded."""

    stage = "generation"

    def __init__(self, message: str, hint: str = "", *, status: int | None = None, partial: bool = False):
        super().__init__(message, hint)
        self.status = status
        self.partial = partial


class AnswerFailed(LLMError):
    """An answer that ended in an `error` event; `data` is that event's payload."""

    def __init__(self, data: dict[str, Any]) -> None:
        super().__init__(str(data.get("message", "The answer failed.")), str(data.get("hint", "")))
        self.data = data
        self.stage = str(data.get("stage", "internal"))


class RetrievalToolError(CitedocsError):
    """The MCP server ran the search tool and reported an error (not a connection problem)."""
