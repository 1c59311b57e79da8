"""The HTTP API: `POST /ask` (SSE or JSON), `POST /search`, `GET /healthz`, `GET /stats`, and the web page.

Routes are thin: validation, retrieval and the relevance gate run before the first byte is sent, so a bad
request, a failed search or a full house is an ordinary HTTP error; after that, failures are `error` events.
Every error body is the envelope `{success: false, data: null, error: {code, message, hint}}`.
"""

from __future__ import annotations

import contextlib
import logging
import math
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
from fastapi import APIRouter, Depends, FastAPI, Query, Request
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field, field_validator
from starlette.types import ASGIApp, Receive, Scope, Send

from citedocs import __version__
from citedocs.answer.conversation import MAX_HISTORY_CHARS, MAX_TURNS
from citedocs.answer.prepared import PreparedAnswer
from citedocs.answer.quotes import QUOTES_LABEL
from citedocs.answer.retriever import Retriever
from citedocs.answer.service import MAX_QUESTION_CHARS, AnswerFailed
from citedocs.api.auth import (
    COOKIE,
    METADATA_PATH,
    AnswerQuota,
    TokenAuth,
    audit_to_stderr,
    protected_resource,
)
from citedocs.api.docs_page import DOCS_ASSETS
from citedocs.api.docs_page import assets as docs_assets
from citedocs.api.docs_page import router as docs_router
from citedocs.api.errors import ApiError, api_error, install_error_handlers
from citedocs.api.guard import HostGuard, allowed_hosts, allowed_origins
from citedocs.api.headers import HeadAsGet, SecurityHeaders
from citedocs.api.limits import MAX_BODY_BYTES, AnswerSlots, BodyLimitMiddleware, error_envelope
from citedocs.api.page_routes import READ_HINT, LlmProbe
from citedocs.api.page_routes import router as page_router
from citedocs.api.sources import SOURCE_HINTS, BackgroundJobs
from citedocs.api.sources import router as sources_router
from citedocs.api.streaming import AnswerEventStream, ClientGone, run_until_disconnect
from citedocs.api.text_guard import TextGuard
from citedocs.errors import CitedocsError, InputError, NotFoundError
from citedocs.llm.chat import ChatModel
from citedocs.llm.model import ModelHandle
from citedocs.search.engine import MAX_K
from citedocs.service import Citedocs
from citedocs.settings import Settings

__all__ = ["ApiError", "ApiState", "create_app"]

log = logging.getLogger(__name__)

STATIC_DIR = Path(__file__).parent / "static"
MAX_ANSWER_K = 20
Mode = Literal["keyword", "semantic", "hybrid"]
CONTROL = re.compile(r"[\x00-\x1f\x7f]")
VALIDATION_HINTS = {
    "/ask": (
        f'Send JSON like {{"question": "How do I ...?"}} with a question of 1-{MAX_QUESTION_CHARS} '
        f"characters, an optional integer k (1-{MAX_ANSWER_K}) and mode (keyword, semantic or hybrid), and "
        f'for a follow-up a history of at most {MAX_TURNS} turns {{"role": "user" or "assistant", "content": '
        f'"..."}}, {MAX_HISTORY_CHARS:,} characters in all (start a new conversation when it grows longer).'
    ),
    "/search": (
        f'Send JSON like {{"query": "rotate logs"}} with a query of 1-{MAX_QUESTION_CHARS} characters, an '
        f"optional integer k (1-{MAX_K}), mode (keyword, semantic or hybrid), source and file_type."
    ),
}


class _Question(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    @staticmethod
    def _not_blank(value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty or only spaces")
        return value

    @staticmethod
    def _no_control(value: str | None) -> str | None:
        if value is not None and CONTROL.search(value):
            raise ValueError(
                "must not contain control characters (NUL, newline, tab, ...): send the name "
                "as plain text, as `citedocs list` shows it"
            )
        return value


class HistoryTurn(BaseModel):
    """One earlier turn of a follow-up (answer/conversation.py)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    role: Literal["user", "assistant"]
    content: str = Field(max_length=MAX_HISTORY_CHARS)


class AskRequest(_Question):
    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    k: int | None = Field(default=None, ge=1, le=MAX_ANSWER_K)
    mode: Mode | None = None
    source: str | None = None
    history: list[HistoryTurn] = Field(default_factory=list, max_length=MAX_TURNS)

    _blank = field_validator("question")(_Question._not_blank)
    _plain = field_validator("source")(_Question._no_control)

    @field_validator("history")
    @classmethod
    def _bounded(cls, value: list[HistoryTurn]) -> list[HistoryTurn]:
        chars = sum(len(turn.content) for turn in value)
        if chars > MAX_HISTORY_CHARS:
            raise ValueError(f"has {chars:,} characters; at most {MAX_HISTORY_CHARS:,} are allowed")
        return value


class SearchRequest(_Question):
    query: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    k: int | None = Field(default=None, ge=1, le=MAX_K)
    mode: Mode | None = None
    source: str | None = None
    file_type: str | None = None

    _blank = field_validator("query")(_Question._not_blank)
    _plain = field_validator("source", "file_type")(_Question._no_control)


class ApiState:
    """What the routes share: the library, the answer service, the slots and the model."""

    def __init__(
        self, settings: Settings, app: Citedocs, model: ModelHandle, retriever: Retriever | None = None
    ) -> None:
        self.settings = settings
        self.app = app
        self.model = model
        self.answers = app.answer_service(model.client, retriever=retriever)
        self.slots = AnswerSlots(settings.max_concurrent)

    def retry_after_s(self) -> int:
        """A typical answer's duration (P50 over the window), at least 1 s and at most 60 s."""
        p50 = self.answers.stats.snapshot()["timings_ms"]["total_ms"]["p50"]
        return max(1, min(60, math.ceil((p50 or 1000.0) / 1000.0)))


async def _state(request: Request) -> ApiState:
    """Async: FastAPI runs a plain dependency in a worker thread, a hand-off per request for an attribute read."""
    state: ApiState = request.app.state.citedocs
    return state


StateDep = Annotated[ApiState, Depends(_state)]
router = APIRouter()


async def _prepare(state: ApiState, body: AskRequest) -> PreparedAnswer:
    try:
        return await state.answers.prepare(
            body.question,
            k=body.k,
            mode=body.mode,
            source=body.source,
            history=[turn.model_dump() for turn in body.history],
        )
    except (InputError, NotFoundError):
        raise
    except CitedocsError as exc:
        raise api_error(exc, stage="retrieval") from None
    except Exception:
        log.exception("retrieval failed")
        raise ApiError(
            500,
            "internal",
            "Searching the index failed.",
            "Try again; if it persists, check the server log.",
            stage="retrieval",
        ) from None


@router.post("/ask", response_model=None)
async def ask(
    body: AskRequest,
    request: Request,
    state: StateDep,
    stream: Annotated[
        bool, Query(description="false: one JSON envelope instead of server-sent events")
    ] = True,
) -> Response:
    if not state.slots.try_acquire():
        wait = state.retry_after_s()
        raise ApiError(
            503,
            "busy",
            f"{state.slots.limit} answers are already in flight.",
            f"Retry in {wait} s (see the Retry-After header).",
            headers={"Retry-After": str(wait)},
        )
    handed_off = False
    try:
        prepared = await _prepare(state, body)
        if prepared.gate.allowed and (problem := state.model.unavailable()) is not None:
            prepared.trace.finish(error="model unavailable")
            status, message, hint = problem
            raise ApiError(
                status,
                "model_unavailable",
                message,
                hint,
                headers={"Retry-After": "5"},
                sources=prepared.sources,
                note=prepared.note,
                quotes=(quotes := prepared.quotes("")),
                quotes_label=QUOTES_LABEL if quotes else None,
            )  # the page still shows them, and what they say
        events = state.answers.generate(prepared)
        if stream:
            response = AnswerEventStream(events, state.slots.release)
            handed_off = True
            return response
        try:
            data = await run_until_disconnect(request, events)
        except AnswerFailed as exc:
            status = 500 if exc.stage == "internal" else 502
            envelope = error_envelope(
                f"{exc.stage}_failed",
                exc.message,
                exc.hint,
                **{k: v for k, v in exc.data.items() if k not in ("message", "hint")},
            )
            return JSONResponse(envelope, status_code=status)
        except ClientGone:
            return Response(status_code=499)
        return JSONResponse({"success": True, "data": data, "error": None})
    finally:
        if not handed_off:
            state.slots.release()


@router.post("/search", response_model=None)
async def search(body: SearchRequest, state: StateDep) -> JSONResponse:
    result = await anyio.to_thread.run_sync(
        lambda: state.app.search(
            body.query, k=body.k, mode=body.mode, source=body.source, file_type=body.file_type, distinct=True
        )
    )
    # sent as it is: plain JSON types already, and FastAPI's re-validation of a returned dict was 0.1 ms
    return JSONResponse(result.to_dict())


@router.get("/healthz")
async def healthz(state: StateDep) -> dict[str, Any]:
    model = state.model.describe()
    endpoints = model.get("endpoints")
    healthy = model["state"] in ("ready", "external") and (
        not endpoints or any(endpoint["state"] != "down" for endpoint in endpoints)
    )
    return {
        "status": "ok" if healthy else "degraded",
        "in_flight": state.slots.in_flight,
        "max_concurrent": state.slots.limit,
        "model": model,
    }


@router.get("/stats")
async def stats(state: StateDep) -> dict[str, Any]:
    watch = await anyio.to_thread.run_sync(state.app.watch_status)  # each folder's watcher (docs/watching.md)
    return {
        **state.answers.stats.snapshot(),
        "in_flight": state.slots.in_flight,
        "max_concurrent": state.slots.limit,
        "watch": watch,
        "model": {"name": state.model.label(), "state": state.model.state},
    }


class SessionRequest(_Question):
    token: str = Field(min_length=1, max_length=200)


@router.post("/auth/session")
async def start_session(body: SessionRequest, state: StateDep) -> JSONResponse:
    """The page's sign-in: a valid token becomes an HttpOnly, SameSite=Strict session cookie (no CSRF: no
    other site's page can send it, and the Origin check refuses foreign pages)."""
    principal = await anyio.to_thread.run_sync(state.app.authenticate, body.token)
    response = JSONResponse(
        {
            "success": True,
            "data": {
                "token": principal.name,
                "scope": principal.scope,
                "sources": None if principal.sources is None else sorted(principal.sources),
            },
            "error": None,
        }
    )
    response.set_cookie(COOKIE, body.token, httponly=True, samesite="strict", path="/")
    return response


@router.delete("/auth/session")
async def end_session() -> JSONResponse:
    response = JSONResponse({"success": True, "data": None, "error": None})
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
    return response


@router.get(METADATA_PATH, include_in_schema=False)
@router.get(METADATA_PATH + "/mcp", include_in_schema=False)
async def resource_metadata(request: Request, state: StateDep) -> dict[str, Any]:
    base = f"{request.url.scheme}://{request.headers.get('host', '127.0.0.1')}"
    return protected_resource(base, state.app.sso.issuer if state.app.sso is not None else "")


@router.get("/", include_in_schema=False)
async def page() -> FileResponse:
    return FileResponse(STATIC_DIR / "index.html", media_type="text/html; charset=utf-8")


def create_app(
    settings: Settings,
    app: Citedocs | None = None,
    llm: ChatModel | None = None,
    *,
    extra_mounts: Mapping[str, ASGIApp] | None = None,
    model: ModelHandle | None = None,
    retriever: Retriever | None = None,
    hosts: Sequence[str] | None = None,
    origins: Sequence[str] | None = None,
) -> FastAPI:
    """The ASGI app. Without `llm`, the model comes from settings: `llm_base_url`, else a llama.cpp server
    started for `llm_gguf`. `extra_mounts` (e.g. {"/mcp": mcp_app}) are mounted as they are, with their
    lifespans run, exempt from the body limit, and answer at their bare path too (no redirect). `retriever`
    (e.g. an McpRetriever) replaces the local index for answers' passages. Every route checks Host and Origin
    against `hosts`/`origins` (default: loopback names and `settings.mcp_allowed_hosts`, any port)."""
    library = app if app is not None else Citedocs(settings)
    handle = model or ModelHandle.from_settings(settings, llm)
    state = ApiState(settings, library, handle, retriever)
    mounts = dict(extra_mounts or {})

    @contextlib.asynccontextmanager
    async def lifespan(api: FastAPI) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            for sub in mounts.values():
                context = getattr(getattr(sub, "router", None), "lifespan_context", None)
                if context is not None:
                    await stack.enter_async_context(context(sub))
            await handle.start(on_ready=lambda client: setattr(state.answers, "llm", client))
            stack.push_async_callback(handle.stop)
            try:
                yield
            finally:
                state.answers.tracer.shutdown()
                if app is None:
                    library.close()

    api = FastAPI(title="citedocs", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None)
    api.state.citedocs = state
    api.state.page_jobs = BackgroundJobs()
    api.state.llm_probe = LlmProbe()
    api.include_router(router)
    api.include_router(sources_router)
    api.include_router(page_router)
    api.include_router(docs_router)  # /docs, offline
    api.mount(DOCS_ASSETS, docs_assets())
    api.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    for path, sub in mounts.items():
        api.mount(path, sub)
    install_error_handlers(api, {**VALIDATION_HINTS, **SOURCE_HINTS, "/read": READ_HINT})
    api.add_middleware(TextGuard, exempt=tuple(mounts))
    api.add_middleware(BodyLimitMiddleware, limit=MAX_BODY_BYTES, exempt=tuple(mounts))
    api.add_middleware(BareMountPaths, paths=tuple(mounts))
    if settings.auth == "tokens":
        audit_to_stderr()
        api.add_middleware(
            TokenAuth,
            authenticate=library.authenticate,
            quota=AnswerQuota(settings.auth_answers_per_minute),
            fetches=library.sso.would_fetch if library.sso is not None else None,
        )
    hosts = list(hosts) if hosts is not None else allowed_hosts(settings.mcp_allowed_hosts)
    api.add_middleware(HostGuard, hosts=hosts, origins=allowed_origins(hosts) if origins is None else origins)
    api.add_middleware(HeadAsGet)
    api.add_middleware(SecurityHeaders)  # outermost: refusals by the guards carry the headers too
    return api


class BareMountPaths:
    """`/mcp` is served as `/mcp/`, not redirected: Starlette's redirect builds its Location from the Host
    header, and MCP clients post to the URL they were given."""

    def __init__(self, app: ASGIApp, paths: Sequence[str]) -> None:
        self.app = app
        self.paths = {p.rstrip("/") for p in paths if p.rstrip("/")}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("path") in self.paths:
            scope = {**scope, "path": scope["path"] + "/", "raw_path": scope["path"].encode() + b"/"}
        await self.app(scope, receive, send)
