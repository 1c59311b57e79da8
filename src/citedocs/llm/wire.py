"""The OpenAI chat wire format: server-sent events, usage, error bodies, Retry-After."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Mapping
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from citedocs.text.tokens import estimate_tokens

MAX_ERROR_BODY = 300


def redact_url(url: str) -> str:
    """The URL without user info or query, fit for a message."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


async def sse_data(response: httpx.Response) -> AsyncIterator[str]:
    """The `data:` payload of each server-sent event (multi-line data joined by newlines)."""
    lines: list[str] = []
    async for line in response.aiter_lines():
        if not line:
            if lines:
                yield "\n".join(lines)
                lines = []
        elif line.startswith("data:"):
            lines.append(line[5:].removeprefix(" "))
    if lines:
        yield "\n".join(lines)


def parse_usage(raw: Any) -> tuple[int, int] | None:
    if not isinstance(raw, dict):
        return None
    prompt, completion = raw.get("prompt_tokens"), raw.get("completion_tokens")
    if isinstance(prompt, int) and isinstance(completion, int):
        return prompt, completion
    return None


def prompt_estimate(body: Mapping[str, Any]) -> int:
    return sum(estimate_tokens(str(m.get("content", ""))) + 4 for m in body.get("messages", []))


def error_text(error: Any) -> str:
    if isinstance(error, dict):
        error = error.get("message") or error.get("type") or json.dumps(error)[:MAX_ERROR_BODY]
    return " ".join(str(error).split())[:MAX_ERROR_BODY]


def error_detail(raw: str) -> str:
    try:
        payload = json.loads(raw)
    except json.JSONDecodeError:
        return " ".join(raw.split())[:MAX_ERROR_BODY]
    if isinstance(payload, dict) and payload.get("error"):
        return error_text(payload["error"])
    return " ".join(raw.split())[:MAX_ERROR_BODY]


def retry_after_seconds(value: str | None) -> float | None:
    """Retry-After in seconds (a number or an HTTP date), or None."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment: float = parsedate_to_datetime(value).timestamp()
        return max(0.0, moment - time.time())
    except (TypeError, ValueError):
        return None
