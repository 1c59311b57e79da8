"""The HTTP front end: answers (SSE and JSON), search, health, statistics and the web page."""

from __future__ import annotations

from citedocs.api.app import ApiError, ApiState, create_app

__all__ = ["ApiError", "ApiState", "create_app"]
