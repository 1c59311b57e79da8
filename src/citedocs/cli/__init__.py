"""The `citedocs` command: one typer app; each verb is a thin call into the library.

`main` first lets a running `citedocs serve` answer a search (`fast.py`), before typer and the library are
imported; everything else, and every search it cannot answer, runs the full app.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["app", "main"]


def main() -> None:
    if sys.argv[1:2] == ["search"]:
        from citedocs.cli.fast import fast_search

        code = fast_search(sys.argv[2:])
        if code is not None:
            sys.exit(code)
    from citedocs.cli.app import main as run

    run()


def __getattr__(name: str) -> Any:
    if name == "app":
        from citedocs.cli.app import app

        return app
    raise AttributeError(f"module 'citedocs.cli' has no attribute {name!r}")
