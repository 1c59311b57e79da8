"""Exit codes: one per class of the error tree, for the full CLI and for the paths that run without typer."""

from __future__ import annotations

from collections.abc import Mapping

from citedocs.errors import (
    AccessDenied,
    AnswerFailed,
    AuthRequired,
    CitedocsError,
    ConfigError,
    EmbedderError,
    FetchError,
    InputError,
    LLMError,
    LLMStreamError,
    ModelMismatchError,
    NoIndexError,
    NotFoundError,
    ParseError,
    PermissionDenied,
    RateLimited,
    RetrievalToolError,
    StoreError,
    UnsafeURLError,
)

__all__ = [
    "EXIT_CODES",
    "EXIT_DENIED",
    "EXIT_ERROR",
    "EXIT_NOT_FOUND",
    "EXIT_NO_INDEX",
    "EXIT_UNAVAILABLE",
    "exit_code_for",
]

EXIT_ERROR = 1  # the request cannot be done as given: fix the argument, the setting or the file
EXIT_NO_INDEX = (
    2  # a read-only command found no index: create it first (as typer's usage errors, "set up first")
)
EXIT_NOT_FOUND = 3
EXIT_DENIED = 4
EXIT_UNAVAILABLE = 5  # a service citedocs depends on (index, model, site) failed: retry or check it

# One exit code per class of the error tree, looked up along the MRO (tests/test_errors.py checks the rows).
EXIT_CODES: Mapping[type[CitedocsError], int] = {
    CitedocsError: EXIT_ERROR,
    ConfigError: EXIT_ERROR,
    InputError: EXIT_ERROR,
    ParseError: EXIT_ERROR,
    ModelMismatchError: EXIT_ERROR,
    NotFoundError: EXIT_NOT_FOUND,
    NoIndexError: EXIT_NO_INDEX,
    AccessDenied: EXIT_DENIED,
    UnsafeURLError: EXIT_DENIED,
    PermissionDenied: EXIT_DENIED,
    AuthRequired: EXIT_DENIED,
    RateLimited: EXIT_UNAVAILABLE,
    StoreError: EXIT_UNAVAILABLE,
    FetchError: EXIT_UNAVAILABLE,
    EmbedderError: EXIT_UNAVAILABLE,
    LLMError: EXIT_UNAVAILABLE,
    LLMStreamError: EXIT_UNAVAILABLE,
    AnswerFailed: EXIT_UNAVAILABLE,
    RetrievalToolError: EXIT_UNAVAILABLE,
}


def exit_code_for(exc: CitedocsError) -> int:
    for cls in type(exc).__mro__:
        if cls in EXIT_CODES:
            return EXIT_CODES[cls]
    return EXIT_ERROR
