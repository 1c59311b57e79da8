"""The events of one answer, defined once: their names, their typed payloads, and the one builder of `done`.

Every front end sends these as they are: HTTP as server-sent events (`event:` the name, `data:` the payload
as JSON) or, with `stream=false`, one JSON object (`collect`: `sources`, `evidence`, `fetched`, `note` and
every field of `done`); MCP `ask` and `citedocs ask --json` return that same object. The order is
`fetching`? `fetched`* `sources` `evidence` `token`* then exactly one terminal event, `done` or `error`.
A refusal is a `done` with `refused: true` (`refused_before_model` when the relevance gate stopped it before
the model), and a citation's check is in `done.sentences`; docs/http-api.md lists every field.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, TypedDict

from citedocs.answer.quotes import QUOTES_LABEL, QuoteDict
from citedocs.errors import AnswerFailed
from citedocs.llm.chat import Finish

__all__ = [
    "EVENT_NAMES",
    "INTERNAL_HINT",
    "TERMINAL_EVENTS",
    "AnswerEvent",
    "DoneData",
    "ErrorData",
    "EventName",
    "TimingsData",
    "UsageData",
    "cache_usage",
    "collect",
    "done_data",
    "error_data",
    "typed_event",
]

EventName = Literal["fetching", "fetched", "sources", "evidence", "token", "done", "error"]
EVENT_NAMES: Final = ("fetching", "fetched", "sources", "evidence", "token", "done", "error")
TERMINAL_EVENTS: Final = frozenset({"done", "error"})
INTERNAL_HINT: Final = "Try again; if it persists, report it with the trace id and the server log."


@dataclass(frozen=True, slots=True)
class AnswerEvent:
    """One server-sent event of an answer: its name (EVENT_NAMES) and its payload."""

    event: str
    data: dict[str, Any]

    @property
    def terminal(self) -> bool:
        return self.event in TERMINAL_EVENTS


class TimingsData(TypedDict):
    retrieval_ms: float
    fetch_ms: float | None
    ttft_ms: float | None
    generation_ms: float | None
    total_ms: float


class UsageData(TypedDict, total=False):
    prompt_tokens: int
    completion_tokens: int
    estimated: bool
    cached_tokens: int
    read_tokens: int


class DoneData(TypedDict):
    """The `done` event. `answer` is the synthesis after its citations were checked (the refusal sentence when
    refused), `quotes` the source sentences under it (or, with `quotes_label`, in its place), `missing_names`
    the question's names no passage writes when the gate refused it for them (else empty), `left_out` the
    sentences of the model's answer its own check removed (answer/model_check.py)."""

    answer: str
    raw_answer: str
    citations: list[int]
    invalid_citations: list[int]
    original_citations: list[int]
    refused: bool
    refused_before_model: bool
    refusal_reason: str | None
    missing_names: list[str]
    relevance: float
    truncated: bool
    finish_reason: str | None
    model: str | None
    usage: UsageData
    timings: TimingsData
    cost_usd: float
    trace_id: str | None
    supported_fraction: float
    repaired: int
    sentences: list[dict[str, Any]]
    quotes: list[QuoteDict]
    quotes_label: str | None
    asks_back: bool
    left_out: list[str]


class ErrorData(TypedDict, total=False):
    """The `error` event: the stage that failed, what happened, what to do, and any text streamed before."""

    stage: str
    message: str
    hint: str
    trace_id: str | None
    partial: str
    upstream_status: int


def done_data(
    *,
    answer: str,
    raw_answer: str = "",
    refused: bool,
    refused_before_model: bool = False,
    refusal_reason: str | None = None,
    missing_names: Sequence[str] = (),
    relevance: float,
    timings: TimingsData,
    trace_id: str | None,
    quotes: list[QuoteDict],
    report: dict[str, Any] | None = None,
    citations: list[int] | None = None,
    truncated: bool = False,
    finish_reason: str | None = None,
    model: str | None = None,
    usage: UsageData | None = None,
    cost_usd: float = 0.0,
    asks_back: bool = False,
    left_out: Sequence[str] = (),
) -> DoneData:
    """The one builder of a `done` payload. `report`: the citation check's `to_dict()` (none before the model).
    When the synthesis is refused or withheld, the quotes are the answer: `quotes_label` says so."""
    report = report or {}
    return {
        "answer": answer,
        "raw_answer": raw_answer,
        "citations": citations or [],
        "invalid_citations": list(report.get("invalid_citations", [])),
        "original_citations": list(report.get("original_citations", [])),
        "refused": refused,
        "refused_before_model": refused_before_model,
        "refusal_reason": refusal_reason,
        "missing_names": list(missing_names),
        "relevance": round(relevance, 3),
        "truncated": truncated,
        "finish_reason": finish_reason,
        "model": model,
        "usage": usage or {"prompt_tokens": 0, "completion_tokens": 0, "estimated": False},
        "timings": timings,
        "cost_usd": round(cost_usd, 8),
        "trace_id": trace_id,
        "supported_fraction": float(report.get("supported_fraction", 1.0)),
        "repaired": int(report.get("repaired", 0)),
        "sentences": list(report.get("sentences", [])),
        "quotes": quotes,
        "quotes_label": QUOTES_LABEL if refused and quotes else None,
        "asks_back": asks_back,
        "left_out": list(left_out),
    }


def error_data(
    stage: str, message: str, hint: str, trace_id: str | None, partial_text: str | None = None
) -> ErrorData:
    data: ErrorData = {"stage": stage, "message": message, "hint": hint, "trace_id": trace_id}
    if partial_text:
        data["partial"] = partial_text
    return data


def cache_usage(finish: Finish) -> UsageData:
    """llama.cpp's count of prompt tokens it took from its cache (`cache_n`) and read now (`prompt_n`)."""
    timings = finish.server_timings or {}
    out: UsageData = {}
    if isinstance(timings.get("cache_n"), int | float):
        out["cached_tokens"] = int(timings["cache_n"])
    if isinstance(timings.get("prompt_n"), int | float):
        out["read_tokens"] = int(timings["prompt_n"])
    return out


def typed_event(name: str, data: DoneData | ErrorData) -> AnswerEvent:
    """A typed payload as the event's plain dict (what goes on the wire)."""
    return AnswerEvent(name, dict(data))


async def collect(events: AsyncGenerator[AnswerEvent, None]) -> dict[str, Any]:
    """Run an answer's events to the end: `{"sources": [...], "evidence": [...], "fetched": [...], "query": {...},
    **done}`, or raise AnswerFailed. `fetched` lists the site pages fetched for the answer (empty when none were
    needed); `query` what retrieval searched (the `evidence` event's)."""
    sources: list[dict[str, Any]] = []
    evidence: list[dict[str, Any]] = []
    fetched: list[dict[str, Any]] = []
    note = None
    query: dict[str, Any] | None = None
    async with contextlib.aclosing(events) as stream:
        async for event in stream:
            if event.event == "sources":
                sources, note = event.data["sources"], event.data.get("note")
            elif event.event == "fetched":
                fetched.append(event.data)
            elif event.event == "evidence":
                evidence, query = event.data["evidence"], event.data.get("query")
            elif event.event == "done":
                return {
                    "sources": sources,
                    "evidence": evidence,
                    "fetched": fetched,
                    "note": note,
                    "query": query,
                    **event.data,
                }
            elif event.event == "error":
                raise AnswerFailed(event.data)
    raise AnswerFailed(
        dict(error_data("internal", "The answer ended without a result.", INTERNAL_HINT, None))
    )
