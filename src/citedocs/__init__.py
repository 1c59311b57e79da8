"""citedocs: ask your documents; get answers you can check."""

__version__ = "0.1.0"
