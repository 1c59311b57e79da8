"""The error tree as HTTP: one status and one machine code per error class, applied by one handler.

Routes raise library errors as they are; `install_error_handlers` turns each into the envelope
`{success: false, data: null, error: {code, message, hint, ...}}` with the status below (looked up along the
class's MRO, so a subclass without its own row inherits its parent's). `tests/test_errors.py` checks that every
class in `citedocs.errors` has its own row here and in the CLI's exit codes.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from citedocs.api.limits import BodyTooLarge, error_envelope
from citedocs.errors import (
    AccessDenied,
    AnswerFailed,
    AuthRequired,
    CitedocsError,
    ConfigError,
    EmbedderError,
    FetchError,
    InputError,
    LLMError,
    LLMStreamError,
    ModelMismatchError,
    NoIndexError,
    NotFoundError,
    ParseError,
    PermissionDenied,
    RateLimited,
    RetrievalToolError,
    StoreError,
    UnsafeURLError,
)

__all__ = ["HTTP_STATUS", "ApiError", "api_error", "install_error_handlers", "status_for"]

log = logging.getLogger(__name__)

HTTP_STATUS: Mapping[type[CitedocsError], tuple[int, str]] = {
    CitedocsError: (500, "internal"),
    ConfigError: (500, "misconfigured"),
    StoreError: (503, "store_unavailable"),
    NotFoundError: (404, "not_found"),
    NoIndexError: (404, "no_index"),
    AccessDenied: (403, "access_denied"),
    UnsafeURLError: (403, "unsafe_url"),
    PermissionDenied: (403, "scope_denied"),
    AuthRequired: (401, "auth_required"),
    RateLimited: (429, "rate_limited"),
    ParseError: (422, "unparseable"),
    FetchError: (502, "fetch_failed"),
    EmbedderError: (503, "embedder_unavailable"),
    ModelMismatchError: (409, "model_mismatch"),
    LLMError: (502, "model_failed"),
    LLMStreamError: (502, "generation_failed"),
    AnswerFailed: (502, "answer_failed"),
    RetrievalToolError: (502, "retrieval_failed"),
    InputError: (422, "invalid_input"),
}


def status_for(exc: CitedocsError) -> tuple[int, str]:
    """(HTTP status, machine code) of the nearest class of `exc` that has a row."""
    for cls in type(exc).__mro__:
        if cls in HTTP_STATUS:
            return HTTP_STATUS[cls]
    return HTTP_STATUS[CitedocsError]


class ApiError(HTTPException):
    """An HTTP error with a machine code and a hint that says what to do next."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        hint: str,
        headers: Mapping[str, str] | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(status, message, dict(headers) if headers else None)
        self.code, self.message, self.hint, self.extra = code, message, hint, extra


def api_error(exc: CitedocsError, **extra: Any) -> ApiError:
    """The library error as the HTTP error its class maps to; `extra` joins the envelope (e.g. `stage`)."""
    status, code = status_for(exc)
    return ApiError(status, code, exc.message, exc.hint, **extra)


def install_error_handlers(app: FastAPI, validation_hints: Mapping[str, str]) -> None:
    """One handler per kind: library errors by the table, validation errors as 422 with the hint of the route
    that refused them (`validation_hints`, by path), HTTP errors as they are."""

    @app.exception_handler(CitedocsError)
    async def library_error(request: Request, exc: CitedocsError) -> JSONResponse:
        error = api_error(exc)
        if error.status_code >= 500:
            log.warning("%s %s: %s", request.method, request.url.path, exc)
        headers = {"Retry-After": str(exc.retry_after_s)} if isinstance(exc, RateLimited) else None
        return JSONResponse(
            error_envelope(error.code, error.message, error.hint),
            status_code=error.status_code,
            headers=headers,
        )

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        message, details = _validation_message(exc)
        hint = validation_hints.get(
            request.url.path, "See docs/http-api.md for the request each route takes."
        )
        envelope = error_envelope("invalid_input", message, hint, details=details)
        return JSONResponse(envelope, status_code=422)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        if isinstance(exc, ApiError):
            envelope = error_envelope(exc.code, exc.message, exc.hint, **exc.extra)
        elif isinstance(exc, BodyTooLarge):
            envelope = error_envelope(
                "body_too_large", str(exc.detail), f"Keep the body under {exc.limit} bytes."
            )
        else:
            envelope = error_envelope(
                "http_error",
                str(exc.detail),
                "See docs/http-api.md for the routes: POST /ask, POST /search, "
                "GET /healthz, GET /stats, GET /.",
            )
        return JSONResponse(envelope, status_code=exc.status_code, headers=exc.headers)


def _validation_message(exc: RequestValidationError) -> tuple[str, list[dict[str, Any]]]:
    details = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error.get("loc", ()) if part != "body") or "body"
        details.append({"field": where, "problem": str(error.get("msg", "invalid"))})
    first = details[0] if details else {"field": "body", "problem": "invalid"}
    return f"Invalid request: {first['field']}: {first['problem']}.", details
