"""citedocs: ask your documents; get answers you can check.

The public API is what `__all__` lists (pinned by tests/test_public_api.py). Names load on first use, so
`import citedocs` stays cheap for a CLI call that needs none of them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    __version__: str
    from citedocs.answer.prepared import PreparedAnswer
    from citedocs.answer.service import AnswerEvent, AnswerService
    from citedocs.errors import CitedocsError
    from citedocs.hits import Hit
    from citedocs.search.engine import SearchResult
    from citedocs.service import Citedocs, ReadResult, SourceInfo
    from citedocs.settings import Settings

_EXPORTS = {
    "AnswerEvent": "citedocs.answer.service",
    "AnswerService": "citedocs.answer.service",
    "Citedocs": "citedocs.service",
    "CitedocsError": "citedocs.errors",
    "Hit": "citedocs.hits",
    "PreparedAnswer": "citedocs.answer.prepared",
    "ReadResult": "citedocs.service",
    "SearchResult": "citedocs.search.engine",
    "Settings": "citedocs.settings",
    "SourceInfo": "citedocs.service",
}

__all__ = [
    "AnswerEvent",
    "AnswerService",
    "Citedocs",
    "CitedocsError",
    "Hit",
    "PreparedAnswer",
    "ReadResult",
    "SearchResult",
    "Settings",
    "SourceInfo",
    "__version__",
]


def _version() -> str:
    # Read on first use: importlib.metadata scans site-packages (~50 ms a CLI call would pay for nothing).
    from importlib import metadata

    try:
        return metadata.version("citedocs")
    except metadata.PackageNotFoundError:  # a source tree that was never installed
        return "0.0.0+unknown"


def __getattr__(name: str) -> Any:
    if name == "__version__":
        globals()[name] = value = _version()
        return value
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'citedocs' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
