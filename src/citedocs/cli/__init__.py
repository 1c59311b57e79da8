"""The `citedocs` command: one typer app; each verb is a thin call into the library.

`main` first lets a running `citedocs serve` answer a search (`fast.py`), and starts `citedocs mcp` on stdio,
before typer and rich are imported; everything else, and every call those two cannot take, runs the full app.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any, TextIO

from citedocs.blas import one_thread_from_the_start

__all__ = ["app", "main"]


def main() -> None:
    one_thread_from_the_start()  # before numpy loads (citedocs/blas.py)
    warnings.showwarning = _show_warning
    if sys.argv[1:2] == ["search"]:
        from citedocs.cli.fast import fast_search

        code = fast_search(sys.argv[2:])
        if code is not None:
            sys.exit(code)
    elif sys.argv[1:2] == ["mcp"]:
        from citedocs.cli.fast import fast_mcp

        code = fast_mcp(sys.argv[2:])
        if code is not None:
            sys.exit(code)
    from citedocs.cli.app import main as run

    run()


_default_show = warnings.showwarning


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """A retired setting is one plain line, as every other message of the command (not a source location)."""
    from citedocs.retired_settings import RetiredSettingWarning  # tomllib and more: only once a warning comes

    if issubclass(category, RetiredSettingWarning):
        (file or sys.stderr).write(f"warning: {message}\n")
    else:
        _default_show(message, category, filename, lineno, file, line)


def __getattr__(name: str) -> Any:
    if name == "app":
        from citedocs.cli.app import app

        return app
    raise AttributeError(f"module 'citedocs.cli' has no attribute {name!r}")
