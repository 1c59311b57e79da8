"""Settings that were renamed or removed: a value still given for one is reported once, saying what to do.

A renamed setting still takes effect under its old name (below every other source, converted to the new unit)
until its old name is dropped; a removed one is ignored, and the warning says what happens instead. Checked in the
environment, the `.env` file and `config.toml`, whichever Settings reads.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "REMOVED",
    "RENAMED",
    "RetiredSettingWarning",
    "retired_values",
    "unknown_setting",
]

PREFIX = "CITEDOCS_"


class RetiredSettingWarning(UserWarning):
    """A CITEDOCS_* setting that no longer exists under that name."""


@dataclass(frozen=True, slots=True)
class Renamed:
    new: str
    convert: Callable[[Any], Any] = lambda value: value


def _ms_to_s(value: Any) -> float:
    return float(value) / 1000.0


RENAMED: Mapping[str, Renamed] = {
    "llama_server": Renamed("llm_server"),
    "local_model": Renamed("llm_local_model"),
    "models_dir": Renamed("llm_models_dir"),
    "model_index_url": Renamed("llm_index_url"),
    "model_catalog": Renamed("llm_catalog"),
    "watch_debounce_ms": Renamed("watch_debounce_s", _ms_to_s),
    "watch_poll_ms": Renamed("watch_poll_s", _ms_to_s),
}

# old name -> what happens now (the constant that replaced it, where)
REMOVED: Mapping[str, str] = {
    "chunk_min_tokens": "a section shorter than 60 tokens folds into its child (CHUNK_MIN_TOKENS, index/ingest.py)",
    "chunk_max_tokens": "a paragraph longer than 560 tokens is split (CHUNK_MAX_TOKENS, index/ingest.py)",
    "ocr_dpi": "pages are rendered at 300 dpi (OCR_DPI, index/ocr.py)",
    "ocr_page_seconds": "one page may take 120 s (OCR_PAGE_S, index/ocr.py)",
    "ocr_max_pages": "scanned PDFs over 500 pages are refused (OCR_MAX_PAGES, index/ocr.py)",
    "fetch_timeout_s": "a page fetch times out after 20 s (FETCH_TIMEOUT_S, sources/fetch.py)",
    "fetch_max_bytes": "pages over 10 MB are refused (FETCH_MAX_BYTES, sources/fetch.py)",
    "ask_fetch_timeout_s": "an answer waits at most 15 s for site pages (ASK_FETCH_TIMEOUT_S, answer/service.py)",
    "site_fetch_delay_s": "background fetches wait 0.5 s between pages, or as a site's robots.txt Crawl-delay asks (sites/service.py)",
    "llama_repack": "llama.cpp's repacking is turned off where it reads prompts slower (LLAMA_REPACK, llm/llama.py)",
    "llm_temperature": "answers are generated at temperature 0.1 (TEMPERATURE, answer/generation.py)",
    "llm_cooldown_s": "a failed endpoint rests 5 s, doubling (COOLDOWN_S, llm/pool.py)",
    "answer_partial": "the prompt always asks for the part of an answer the sources hold (answer/prompt.py)",
    "min_supported": "an answer with under half its checked sentences held is withheld (MIN_SUPPORTED, "
    "answer/citations.py)",
    "answer_stop_repeats": "generation stops after 4 copies of one line (STOP_REPEATS, answer/repetition.py)",
    "passage_overlap": "a passage 80% covered by a better one is left out (PASSAGE_OVERLAP, search/distinct.py)",
    "evidence_tokens": "the model reads every passage whole (answer/evidence.py)",
    "evidence_whole": "the model reads every passage whole (answer/evidence.py)",
    "mcp_max_chars": "MCP results are cut and paged at 24,000 characters (DEFAULT_MAX_CHARS, mcp/budget.py)",
    "http_max_connections": "open connections beyond 256 get 503 (MAX_CONNECTIONS, httpd.py)",
}

_warned: set[tuple[str, str]] = set()


def _message(old: str, where: str) -> str:
    name = PREFIX + old.upper()
    if old in RENAMED:
        new = PREFIX + RENAMED[old].new.upper()
        unit = " (in seconds now)" if old.endswith("_ms") else ""
        return (
            f"{name} ({where}) is now called {new}{unit}; rename it there. The old name still works for now."
        )
    return f"{name} ({where}) was removed and is ignored: {REMOVED[old]}. Delete it there."


def unknown_setting(name: str) -> str:
    """Why Settings(name=...) is refused."""
    if name in RENAMED:
        return f"Settings has no {name!r}: it is now called {RENAMED[name].new!r}."
    if name in REMOVED:
        return f"Settings has no {name!r}: it was removed ({REMOVED[name]})."
    return f"Settings has no {name!r}; see docs/configuration.md for the settings there are."


def _warn(old: str, where: str) -> None:
    if (old, where) not in _warned:
        _warned.add((old, where))
        warnings.warn(_message(old, where), RetiredSettingWarning, stacklevel=4)


def retired_values(places: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """Warn about every retired setting given in `places` (where, values by setting name; highest first);
    return the renamed ones' values under their new names."""
    found: dict[str, Any] = {}
    for where, given in places:
        values = {str(k).lower(): v for k, v in given.items()}
        for old, value in values.items():
            if old in RENAMED:
                _warn(old, where)
                renamed = RENAMED[old]
                found.setdefault(renamed.new, renamed.convert(value))
            elif old in REMOVED:
                _warn(old, where)
    return found
