"""Shared pieces of the CLI: options, output, error translation."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console

from citedocs.errors import (
    AccessDenied,
    AnswerFailed,
    CitedocsError,
    ConfigError,
    EmbedderError,
    FetchError,
    InputError,
    LLMError,
    LLMStreamError,
    ModelMismatchError,
    NotFoundError,
    ParseError,
    RetrievalToolError,
    StoreError,
    UnsafeURLError,
)
from citedocs.settings import Settings

console = Console(stderr=True)
out = Console(soft_wrap=True, highlight=False)

DbOption = Annotated[
    str | None, typer.Option("--db", help="Index file (default: platform data dir; env CITEDOCS_DB).")
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON.")]
T = TypeVar("T")

EXIT_ERROR = 1  # the request cannot be done as given: fix the argument, the setting or the file
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
    AccessDenied: EXIT_DENIED,
    UnsafeURLError: EXIT_DENIED,
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


def settings_for(db: str | None) -> Settings:
    return Settings(db=db) if db else Settings()


@contextmanager
def service(db: str | None) -> Iterator[Any]:
    from citedocs.service import Citedocs

    app_ = Citedocs(settings_for(db))
    try:
        yield app_
    finally:
        app_.close()


def run(fn: Callable[[], T]) -> T:
    """Translate library errors into a message and an exit code; never a traceback for a user error."""
    try:
        return fn()
    except CitedocsError as exc:
        console.print(f"[red]error:[/red] {exc}")
        code = exit_code_for(exc)
        raise typer.Exit(code) from None


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")
