"""One OpenTelemetry trace per answer: `citedocs.answer` with `retrieval` and `generation` spans.

Off unless `settings.otel_endpoint` is set; then the SDK is imported (lazily, so it costs nothing when off)
and spans go to that OTLP/HTTP collector. Spans are parented explicitly, never made "current": an answer's
generation spans many event-loop turns of a token stream, and a context variable set there would leak into
whatever else the loop runs meanwhile. Every answer has a trace id either way, so logs and clients can quote it.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any, Protocol

from citedocs.errors import ConfigError
from citedocs.settings import Settings

__all__ = ["AnswerTrace", "NoTrace", "OtelTracer", "Tracer", "make_tracer"]

Attributes = Mapping[str, str | int | float | bool]


class AnswerTrace(Protocol):
    trace_id: str

    def start(self, name: str, attributes: Attributes | None = None) -> None: ...
    def end(self, name: str, attributes: Attributes | None = None, error: str | None = None) -> None: ...
    def event(self, name: str, attributes: Attributes | None = None) -> None: ...
    def finish(self, attributes: Attributes | None = None, error: str | None = None) -> None: ...


class Tracer(Protocol):
    def answer(self, attributes: Attributes | None = None) -> AnswerTrace: ...
    def shutdown(self) -> None: ...


class NoTrace:
    """Tracing off: a fresh random trace id and nothing else."""

    def __init__(self) -> None:
        self.trace_id = secrets.token_hex(16)

    def start(self, name: str, attributes: Attributes | None = None) -> None:
        return None

    def end(self, name: str, attributes: Attributes | None = None, error: str | None = None) -> None:
        return None

    def event(self, name: str, attributes: Attributes | None = None) -> None:
        return None

    def finish(self, attributes: Attributes | None = None, error: str | None = None) -> None:
        return None


class NoTracer:
    def answer(self, attributes: Attributes | None = None) -> AnswerTrace:
        return NoTrace()

    def shutdown(self) -> None:
        return None


class _OtelTrace:
    def __init__(self, tracer: Any, attributes: Attributes | None) -> None:
        from opentelemetry import trace

        self._trace = trace
        self._root = tracer.start_span("citedocs.answer", attributes=dict(attributes or {}))
        self._tracer = tracer
        self._children: dict[str, Any] = {}
        self.trace_id = format(self._root.get_span_context().trace_id, "032x")

    def start(self, name: str, attributes: Attributes | None = None) -> None:
        context = self._trace.set_span_in_context(self._root)
        self._children[name] = self._tracer.start_span(
            name, context=context, attributes=dict(attributes or {})
        )

    def _close(self, span: Any, attributes: Attributes | None, error: str | None) -> None:
        if attributes:
            span.set_attributes(dict(attributes))
        if error is not None:
            from opentelemetry.trace import Status, StatusCode

            span.set_status(Status(StatusCode.ERROR, error))
        span.end()

    def end(self, name: str, attributes: Attributes | None = None, error: str | None = None) -> None:
        span = self._children.pop(name, None)
        if span is not None:
            self._close(span, attributes, error)

    def event(self, name: str, attributes: Attributes | None = None) -> None:
        target = self._children.get("generation", self._root)
        target.add_event(name, attributes=dict(attributes or {}))

    def finish(self, attributes: Attributes | None = None, error: str | None = None) -> None:
        for name in list(self._children):
            self.end(name, error=error)
        self._close(self._root, attributes, error)


class OtelTracer:
    """Spans exported over OTLP/HTTP to `endpoint` (e.g. http://localhost:4318) by a batch processor."""

    def __init__(self, endpoint: str, service_name: str = "citedocs") -> None:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError as exc:
            raise ConfigError(
                "CITEDOCS_OTEL_ENDPOINT is set but OpenTelemetry is not installed.",
                "Run `pip install opentelemetry-sdk opentelemetry-exporter-otlp-proto-http`, "
                "or unset CITEDOCS_OTEL_ENDPOINT.",
            ) from exc
        url = endpoint.rstrip("/")
        if not url.endswith("/v1/traces"):
            url += "/v1/traces"
        self._provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
        self._provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=url)))
        self._tracer = self._provider.get_tracer("citedocs.answer")

    @classmethod
    def with_processor(cls, processor: Any, service_name: str = "citedocs") -> OtelTracer:
        """A tracer that hands finished spans to `processor` (tests use an in-memory exporter)."""
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider

        tracer = cls.__new__(cls)
        tracer._provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
        tracer._provider.add_span_processor(processor)
        tracer._tracer = tracer._provider.get_tracer("citedocs.answer")
        return tracer

    def answer(self, attributes: Attributes | None = None) -> AnswerTrace:
        return _OtelTrace(self._tracer, attributes)

    def shutdown(self) -> None:
        self._provider.shutdown()


def make_tracer(settings: Settings) -> Tracer:
    """The tracer `settings` asks for: OTLP when `otel_endpoint` is set, else one that records nothing."""
    if settings.otel_endpoint:
        return OtelTracer(settings.otel_endpoint)
    return NoTracer()
