"""Shared pieces of the CLI: options, output, error translation."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from citedocs.cli.exits import (
    EXIT_CODES,
    EXIT_DENIED,
    EXIT_ERROR,
    EXIT_NOT_FOUND,
    EXIT_UNAVAILABLE,
    exit_code_for,
)
from citedocs.cli.terminal import shown
from citedocs.errors import CitedocsError
from citedocs.settings import Settings

if TYPE_CHECKING:
    from citedocs.service import Citedocs

# emoji=False: rich would otherwise print a document's `:smile:` as an emoji (text is data, cli/terminal.py)
console = Console(stderr=True, emoji=False)
out = Console(soft_wrap=True, highlight=False, emoji=False)

DbOption = Annotated[
    str | None, typer.Option("--db", help="Index file (default: platform data dir; env CITEDOCS_DB).")
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON.")]
T = TypeVar("T")
__all__ = ["EXIT_CODES", "EXIT_DENIED", "EXIT_ERROR", "EXIT_NOT_FOUND", "EXIT_UNAVAILABLE", "exit_code_for"]


def settings_for(db: str | None) -> Settings:
    """The settings, `--db` over the configured index; a bad setting is a message naming where it was set."""
    return run(lambda: Settings(db=db) if db else Settings())


@contextmanager
def service(db: str | None, *, create: bool = True) -> Iterator[Citedocs]:
    """The library on the index `db` names (else the settings'), closed after the block. Read-only commands pass
    `create=False`: a missing index is then an error naming the command that creates it (exit 2)."""
    from citedocs.service import Citedocs

    app_ = run(
        lambda: Citedocs(settings_for(db), create=create)
    )  # an index that cannot be opened is a message too
    try:
        yield app_
    finally:
        app_.close()


def run(fn: Callable[[], T]) -> T:
    """Translate library errors into a message and an exit code; never a traceback for a user error."""
    try:
        return fn()
    except CitedocsError as exc:
        console.print(f"[red]error:[/red] {escape(shown(str(exc)))}")
        code = exit_code_for(exc)
        raise typer.Exit(code) from None


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")
