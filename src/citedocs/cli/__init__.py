"""The `citedocs` command: one typer app; each verb is a thin call into the library."""

from citedocs.cli.app import app, main

__all__ = ["app", "main"]
