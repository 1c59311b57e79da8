"""Where citedocs keeps its index and config, and how `citedocs search` finds the index without pydantic.

Settings (settings.py) takes its defaults from here; the fast path of `citedocs search` (cli/fast.py), which a
running server answers before the full CLI is imported, asks `quick_index` instead of building Settings. Both
follow one rule, so they cannot name two different indexes. Standard library and platformdirs only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import platformdirs

__all__ = [
    "APP_NAME",
    "DEFAULT_TOP_K",
    "QuickIndex",
    "default_config_path",
    "default_db_path",
    "default_models_dir",
    "only_defaults",
    "quick_index",
]

APP_NAME = "citedocs"
DEFAULT_TOP_K = 5  # results per search and passages per answer (the `top_k` setting's default)
_POSTGRES = ("postgresql://", "postgres://")


def default_db_path() -> Path:
    return Path(platformdirs.user_data_dir(APP_NAME)) / "index.sqlite3"


def default_models_dir() -> Path:
    return Path(platformdirs.user_data_dir(APP_NAME)) / "models"


def default_config_path() -> Path:
    return Path(
        os.environ.get("CITEDOCS_CONFIG") or Path(platformdirs.user_config_dir(APP_NAME)) / "config.toml"
    )


@dataclass(frozen=True, slots=True)
class QuickIndex:
    db_path: Path  # resolved
    top_k: int


def quick_index(db: str | None, k: int | None = None) -> QuickIndex | None:
    """The SQLite index and `top_k` Settings would resolve, from `--db`, `-k` and the environment alone; None
    whenever only Settings can tell (a `.env` or config file that may set them, PostgreSQL, a value to check)."""
    db = db or os.environ.get("CITEDOCS_DB")
    if (db is None or (k is None and "CITEDOCS_TOP_K" not in os.environ)) and _files_may_set():
        return None
    db = db or str(default_db_path())
    top_k = str(k) if k is not None else os.environ.get("CITEDOCS_TOP_K", str(DEFAULT_TOP_K)).strip()
    if db.startswith(_POSTGRES) or not top_k.isdigit() or not 1 <= int(top_k) <= 50:
        return None
    return QuickIndex(Path(db).expanduser().resolve(), int(top_k))


def only_defaults() -> bool:
    """Whether every setting but the index and `top_k` (which `quick_index` reads) has its default: no `.env`
    or config file that could set one, and no other CITEDOCS_* variable (in any case, retired names too)."""
    return not _files_may_set() and not any(
        name.upper().startswith("CITEDOCS_") and name not in _QUICK_VARIABLES for name in os.environ
    )


_QUICK_VARIABLES = ("CITEDOCS_DB", "CITEDOCS_TOP_K", "CITEDOCS_ENV_FILE", "CITEDOCS_CONFIG")


def _files_may_set() -> bool:
    """A `.env` or config file exists that Settings would read."""
    env_file = os.environ.get("CITEDOCS_ENV_FILE")
    return bool((env_file is None and Path(".env").exists()) or env_file or default_config_path().exists())
