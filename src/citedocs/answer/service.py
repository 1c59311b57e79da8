"""Answer a question from the index (or an MCP search server): retrieve, gate, prompt, stream, check citations.

Two phases, so a front end can turn setup failures into ordinary errors before it sends a byte: `prepare`
(validation, retrieval in a worker thread, the relevance gate) and `generate` (the events of one answer:
`fetching` and one `fetched` per page when the best candidates are site pages not fetched yet, `sources`,
`evidence`, `token`*, then exactly one `done` or `error`). `stream` joins them for callers that want events
only. `evidence` comes before the model is called: the few sentences that match the question best, for a
reader to look at while the model reads (it is not the answer); the model reads the passages whole.
Tokens stream raw as the model writes them; `done.answer` is the answer after its citations were checked and
repaired (a sentence no passage supports marked `[unverified]`) and the model checked its sentences
(answer/model_check.py: those it does not find in their passages left out, `done.left_out`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any, cast

from citedocs.answer.citations import MIN_SUPPORTED
from citedocs.answer.confirm import confirmed_after_refusal
from citedocs.answer.conversation import (
    FollowUpQuery,
    Turn,
    compact_history,
    follow_up_gate,
    fuse_rankings,
    parse_history,
)
from citedocs.answer.events import (
    INTERNAL_HINT,
    AnswerEvent,
    TimingsData,
    UsageData,
    cache_usage,
    collect,
    done_data,
    error_data,
    typed_event,
)
from citedocs.answer.evidence import best_sentences, score_sentences
from citedocs.answer.gate import GateDecision
from citedocs.answer.generation import ASKS, RETRY_TEMPERATURE, TEMPERATURE, Reply, model_reply
from citedocs.answer.model_check import SPARE_SUPPORT, checked_by_model
from citedocs.answer.pages import PageFetcher, links_to_fetch
from citedocs.answer.passages import passages
from citedocs.answer.prepared import HIGHLIGHTS, PreparedAnswer, evidence_data
from citedocs.answer.prompt import build_messages, question_language, refusal_sentence, seeded_fence
from citedocs.answer.quotes import QUOTE_CHARS
from citedocs.answer.repetition import STOP_REPEATS
from citedocs.answer.retriever import Retriever
from citedocs.answer.rewriter import FollowUpRewriter
from citedocs.answer.stats import AnswerRecord, RollingStats, ms
from citedocs.answer.telemetry import Tracer, make_tracer
from citedocs.answer.verdict import verdict
from citedocs.errors import AnswerFailed, CitedocsError, InputError, LLMStreamError, NotFoundError
from citedocs.hits import Hit
from citedocs.llm.chat import ChatModel, Finish, Prices, Usage
from citedocs.llm.wire import prompt_estimate
from citedocs.search.distinct import PASSAGE_OVERLAP
from citedocs.search.engine import MAX_K, SearchResult
from citedocs.settings import Settings

__all__ = ["MAX_QUESTION_CHARS", "AnswerEvent", "AnswerFailed", "AnswerService", "collect"]

log = logging.getLogger(__name__)

MAX_QUESTION_CHARS = 2000
ASK_FETCH_TIMEOUT_S = 15.0  # the longest an answer waits for the site pages it fetches first
# The constants that decide what an answer is made of, under the names of the settings they once were: an
# evaluation run records them beside its settings (eval/answers.py), so runs stay comparable. The evidence
# windows are gone (the model reads every passage whole): recorded as the runs before recorded it.
ANSWER_CONSTANTS: Mapping[str, float | int | bool] = {
    "passage_overlap": PASSAGE_OVERLAP,
    "evidence_tokens": 0,
    "evidence_whole": 1,
    "min_supported": MIN_SUPPORTED,
    "answer_stop_repeats": STOP_REPEATS,
    "answer_partial": True,
    "llm_temperature": TEMPERATURE,
    "asks_after_refusal": ASKS,
    "retry_temperature": RETRY_TEMPERATURE,
    "quote_chars": QUOTE_CHARS,
    "model_check_spare": SPARE_SUPPORT,
}


class AnswerService:
    """Answers questions from one retriever (this index, or an MCP server) with one LLM endpoint."""

    def __init__(
        self,
        retriever: Retriever,
        llm: ChatModel | None,
        settings: Settings,
        *,
        tracer: Tracer | None = None,
        stats: RollingStats | None = None,
    ) -> None:
        self.retriever = retriever
        self.llm = llm
        self.settings = settings
        self.tracer = tracer if tracer is not None else make_tracer(settings)
        self.stats = stats if stats is not None else RollingStats()
        self.rewriter = FollowUpRewriter()

    @property
    def relevance_threshold(self) -> float:
        """`settings.relevance_threshold`; 0 or less turns the gate off."""
        return self.settings.relevance_threshold

    async def prepare(
        self,
        question: str,
        *,
        k: int | None = None,
        mode: str | None = None,
        source: str | None = None,
        history: Sequence[Turn | Mapping[str, Any]] | None = None,
    ) -> PreparedAnswer:
        """Validate, retrieve and gate. Raises InputError/NotFoundError for a bad request, CitedocsError
        (or anything else) when retrieval fails; the failure is counted and traced. With `history` (earlier
        turns, answer/conversation.py) retrieval also searches a standalone rewrite of the question."""
        question = validate_question(question)
        turns = parse_history(history)
        started = time.perf_counter()
        k = k or self.settings.top_k
        trace = self.tracer.answer({"question.chars": len(question), "history.turns": len(turns)})
        trace.start("retrieval", {"k": k})
        try:
            query = await self.rewriter.query(self.llm, question, turns)
            if query.by:
                trace.event("follow_up.rewrite", {"by": query.by, "ms": query.ms})
            result = await self._search(query, k, mode, source)
        except BaseException as exc:
            trace.finish(error=type(exc).__name__)
            if not isinstance(exc, InputError | NotFoundError) and isinstance(exc, Exception):
                retrieval_ms = ms(time.perf_counter() - started)
                self.stats.record(AnswerRecord("error", {"retrieval_ms": retrieval_ms}, stage="retrieval"))
            raise
        retrieval_ms = ms(time.perf_counter() - started)
        fetch = []
        if isinstance(self.retriever, PageFetcher):
            fetch = links_to_fetch(result.hits, k, self.settings.ask_fetch_pages)
        hits = self._passages(result.hits, k)
        if fetch:
            gate = GateDecision(True, f"{len(fetch)} site pages are fetched before the relevance check.", 0.0)
        else:
            gate = self._gate(query, hits)
        trace.end("retrieval", {"hits": len(hits), "gate.best": round(gate.best, 3), "fetch": len(fetch)})
        prepared = PreparedAnswer(
            question,
            hits,
            gate,
            trace,
            started,
            retrieval_ms,
            result.mode,
            result.note,
            fetch=fetch,
            k=k,
            source=source,
            history=turns,
            query=query,
        )
        if not fetch:
            self._choose_evidence(prepared)
        return prepared

    def _choose_evidence(self, prepared: PreparedAnswer) -> None:
        """What the `evidence` event shows: the sentences that match the question best."""
        if not prepared.gate.allowed:
            return
        chosen = time.perf_counter()
        asked = prepared.searched.context  # a follow-up's sentences match it with its context
        scored = prepared.scored = score_sentences(asked, prepared.hits)
        prepared.highlights = best_sentences(asked, prepared.hits, HIGHLIGHTS, scored=scored)
        prepared.evidence_ms = ms(time.perf_counter() - chosen)

    def _passages(self, hits: Sequence[Hit], k: int) -> list[Hit]:
        """What the model reads of a retrieval, before and after fetching pages alike (answer/passages.py)."""
        return passages(hits, k, overlap=PASSAGE_OVERLAP)

    async def _search(
        self, query: FollowUpQuery, k: int, mode: str | None, source: str | None
    ) -> SearchResult:
        """Twice the passages asked for: unfetched pages (links) among them are not passages to cite. A
        follow-up searches the literal question and its rewrite (and the carried words alone), fused."""
        results = [
            await self.retriever.search(text, k=min(MAX_K, 2 * k), mode=mode, source=source)
            for text in query.searched
        ]
        if len(results) == 1:
            return results[0]
        hits = fuse_rankings([r.hits for r in results])
        notes = "; ".join(dict.fromkeys(r.note for r in results if r.note)) or None
        return SearchResult(query.question, results[0].mode, hits, notes)

    def _gate(self, query: FollowUpQuery, hits: Sequence[Hit]) -> GateDecision:
        """The relevance gate on the question, and for a follow-up on the question with its context."""
        context = query.context if query.rewrite else None
        return follow_up_gate(query.question, context, hits, self.relevance_threshold)

    async def _fetch_pages(self, prepared: PreparedAnswer) -> AsyncGenerator[AnswerEvent, None]:
        """Fetch the pages the question needs (events as each lands), then retrieve again and gate."""
        assert isinstance(self.retriever, PageFetcher)
        urls, prepared.fetch = prepared.fetch, []
        timeout_s = ASK_FETCH_TIMEOUT_S
        yield AnswerEvent(
            "fetching",
            {
                "urls": urls,
                "timeout_s": timeout_s,
                "note": "The best candidates are documentation pages not fetched yet; fetching them first.",
            },
        )
        started = time.perf_counter()
        prepared.trace.start("fetch", {"pages": len(urls)})
        fetched = 0
        async for outcome in self.retriever.fetch_pages(urls, timeout_s):
            fetched += outcome.ok
            yield AnswerEvent("fetched", outcome.to_dict())
        prepared.trace.end("fetch", {"fetched": fetched})
        fetch_ms = ms(time.perf_counter() - started)
        again = time.perf_counter()
        try:
            result = await self._search(prepared.searched, prepared.k, prepared.mode, prepared.source)
        except CitedocsError as exc:  # keep the first retrieval's passages; say why
            prepared.note = f"retrieval after fetching failed ({exc.message}); {prepared.note or ''}".strip()
        else:
            prepared.hits, prepared.note = self._passages(result.hits, prepared.k), result.note
        prepared.gate = self._gate(prepared.searched, prepared.hits)
        prepared.fetch_ms = fetch_ms
        prepared.retrieval_ms = round(prepared.retrieval_ms + ms(time.perf_counter() - again), 1)
        self._choose_evidence(prepared)

    async def generate(self, prepared: PreparedAnswer) -> AsyncGenerator[AnswerEvent, None]:
        """`sources`, then `token`*, then exactly one `done` or `error`. Closing the iterator early (a
        client that left) closes the model stream, so the model server stops generating."""
        if prepared.fetch:
            async with contextlib.aclosing(self._fetch_pages(prepared)) as fetching:
                async for step in fetching:
                    yield step
        yield AnswerEvent("sources", {"sources": prepared.sources, "note": prepared.note})
        yield AnswerEvent("evidence", evidence_data(prepared))
        if not prepared.gate.allowed:
            yield self._refused_before_model(prepared)
            return
        if self.llm is None:
            yield self._error(
                prepared,
                "generation",
                "No language model is configured.",
                "Run `citedocs model install`, or set CITEDOCS_LLM_BASE_URL, or CITEDOCS_LLM_GGUF for a local "
                "llama.cpp server.",
            )
            return
        fence = None if prepared.seed is None else seeded_fence(prepared.seed, prepared.question)
        messages, _ = build_messages(
            prepared.question, prepared.hits, fence, history=compact_history(prepared.history)
        )
        prepared.messages = messages
        reply, first = Reply(), True
        prepared.trace.start("generation", {"model": self.llm.model, "sources": len(prepared.hits)})
        terminal: AnswerEvent | None = None
        try:
            shown = model_reply(
                self.llm,
                messages,
                reply,
                max_tokens=self.settings.llm_max_tokens,
                started=prepared.started,
                seed=prepared.seed,
                refusal=refusal_sentence(question_language(prepared.question)),
            )
            async with contextlib.aclosing(shown) as pieces:
                async for piece in pieces:
                    if first:
                        first = False
                        prepared.trace.event("first_token", {"ttft_ms": reply.ttft_ms or 0.0})
                    yield AnswerEvent("token", {"text": piece})
            if reply.asks > 1:
                prepared.trace.event("asked_again", {"refused_first": True})
            if reply.looped_at is not None:
                finish = self._looped(messages, len(reply.pieces))
                terminal = await self._done(prepared, reply.text, finish, reply.ttft_ms, reply.generation_ms)
            elif reply.finish is not None:
                terminal = await self._done(
                    prepared, reply.text, reply.finish, reply.ttft_ms, reply.generation_ms
                )
        except LLMStreamError as exc:
            terminal = self._error(prepared, "generation", exc.message, exc.hint, reply.partial, exc.status)
        except (GeneratorExit, asyncio.CancelledError):
            self._cancelled(prepared, reply.ttft_ms)
            raise
        except Exception:
            log.exception("answer %s failed", prepared.trace.trace_id)
            terminal = self._error(
                prepared, "internal", "An internal error stopped the answer.", INTERNAL_HINT, reply.partial
            )
        if terminal is None:
            terminal = self._error(
                prepared,
                "generation",
                "The model stream ended without a finish.",
                "Try again; if it persists, check the model server's log.",
                reply.partial,
            )
        yield terminal

    async def stream(
        self,
        question: str,
        *,
        k: int | None = None,
        mode: str | None = None,
        source: str | None = None,
        history: Sequence[Turn | Mapping[str, Any]] | None = None,
    ) -> AsyncGenerator[AnswerEvent, None]:
        """Every event of one answer; a failed retrieval is an `error` event with stage "retrieval".
        Raises InputError (before any event) for an empty or overlong question."""
        question = validate_question(question)
        parse_history(history)
        try:
            prepared = await self.prepare(question, k=k, mode=mode, source=source, history=history)
        except CitedocsError as exc:
            yield typed_event("error", error_data("retrieval", exc.message, exc.hint, None))
            return
        except Exception:
            log.exception("retrieval failed")
            yield typed_event(
                "error",
                error_data(
                    "retrieval",
                    "Searching the index failed.",
                    "Run `citedocs status` to check the index.",
                    None,
                ),
            )
            return
        async with contextlib.aclosing(self.generate(prepared)) as events:
            async for event in events:
                yield event

    async def answer(
        self,
        question: str,
        *,
        k: int | None = None,
        mode: str | None = None,
        source: str | None = None,
        history: Sequence[Turn | Mapping[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """The whole answer as one dict: `sources` plus every field of `done`. Raises AnswerFailed."""
        return await collect(self.stream(question, k=k, mode=mode, source=source, history=history))

    # -- terminal events --------------------------------------------------------------------------
    def _refused_before_model(self, prepared: PreparedAnswer) -> AnswerEvent:
        timings = self._timings(prepared, None, None)
        self.stats.record(AnswerRecord("refusal", _plain(timings), gate_refusal=True))
        prepared.trace.finish({"refused": True, "refused.before_model": True})
        done = done_data(
            answer=refusal_sentence(question_language(prepared.question)),
            refused=True,
            refused_before_model=True,
            refusal_reason=prepared.gate.reason,
            missing_names=prepared.gate.missing,
            relevance=prepared.gate.best,
            timings=timings,
            trace_id=prepared.trace.trace_id,
            quotes=[],
        )
        return typed_event("done", done)

    @staticmethod
    def _timings(prepared: PreparedAnswer, ttft_ms: float | None, generation_ms: float | None) -> TimingsData:
        return {
            "retrieval_ms": prepared.retrieval_ms,
            "fetch_ms": prepared.fetch_ms,
            "ttft_ms": ttft_ms,
            "generation_ms": generation_ms,
            "total_ms": ms(time.perf_counter() - prepared.started),
        }

    async def _done(
        self, prepared: PreparedAnswer, raw: str, finish: Finish, ttft_ms: float | None, generation_ms: float
    ) -> AnswerEvent:
        checked = verdict(raw, prepared.hits, prepared.question, follow_up=bool(prepared.history))
        if self.llm and not checked.refused and not checked.asks_back:
            checked = await checked_by_model(self.llm, prepared, checked)
        report, refused, citations = checked.report, checked.refused, checked.citations
        model_refused = refused and not checked.left_out  # withheld by its check: the model did answer
        confirmed = await confirmed_after_refusal(self.llm, prepared, model_refused)
        timings = self._timings(prepared, ttft_ms, generation_ms)
        usage = finish.usage
        self.stats.record(
            AnswerRecord(
                "refusal" if refused else "answer",
                _plain(timings),
                usage.prompt_tokens,
                usage.completion_tokens,
                finish.cost_usd,
            )
        )
        prepared.trace.end(
            "generation",
            {
                "finish_reason": finish.finish_reason,
                "tokens.prompt": usage.prompt_tokens,
                "tokens.completion": usage.completion_tokens,
            },
        )
        prepared.trace.finish(
            {
                "refused": refused,
                "refused.withheld": checked.reason is not None,
                "citations": len(citations),
                "invalid_citations": len(report.invalid_citations),
            }
        )
        usage_data: UsageData = {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "estimated": usage.estimated,
        }
        usage_data.update(cache_usage(finish))
        done = done_data(
            answer=checked.answer,
            raw_answer=raw,
            citations=citations,
            refused=refused,
            refusal_reason=checked.reason,
            relevance=prepared.gate.best,
            truncated=finish.truncated,
            finish_reason=finish.finish_reason,
            model=finish.model or (self.llm.model if self.llm else None),
            usage=usage_data,
            timings=timings,
            cost_usd=finish.cost_usd,
            trace_id=prepared.trace.trace_id,
            report=checked.report_dict(),
            quotes=prepared.quotes("" if refused else checked.answer, model_refused, confirmed),
            asks_back=checked.asks_back,
            left_out=list(checked.left_out),
        )
        return typed_event("done", done)

    def _looped(self, messages: Sequence[Mapping[str, Any]], pieces: int) -> Finish:
        """The finish of a generation stopped because it looped: the server sent no usage, so it is estimated."""
        usage = Usage(prompt_estimate({"messages": messages}), pieces, estimated=True)
        cost = Prices.from_settings(self.settings).cost(usage)
        return Finish("repetition", usage, cost, self.llm.model if self.llm else "")

    def _error(
        self,
        prepared: PreparedAnswer,
        stage: str,
        message: str,
        hint: str,
        partial_text: str | None = None,
        status: int | None = None,
    ) -> AnswerEvent:
        total_ms = ms(time.perf_counter() - prepared.started)
        self.stats.record(
            AnswerRecord("error", {"retrieval_ms": prepared.retrieval_ms, "total_ms": total_ms}, stage=stage)
        )
        prepared.trace.finish(error=message)
        data = error_data(stage, message, hint, prepared.trace.trace_id, partial_text)
        if status is not None:
            data["upstream_status"] = status
        return typed_event("error", data)

    def _cancelled(self, prepared: PreparedAnswer, ttft_ms: float | None) -> None:
        total_ms = ms(time.perf_counter() - prepared.started)
        timings = {"retrieval_ms": prepared.retrieval_ms, "ttft_ms": ttft_ms, "total_ms": total_ms}
        self.stats.record(AnswerRecord("cancelled", timings))
        prepared.trace.finish({"cancelled": True}, error="client disconnected")


def validate_question(question: str) -> str:
    if not isinstance(question, str) or not question.strip():
        raise InputError("The question is empty.", "Type a question about your documents.")
    if len(question) > MAX_QUESTION_CHARS:
        raise InputError(
            f"The question has {len(question)} characters; at most {MAX_QUESTION_CHARS} are allowed.",
            "Shorten the question.",
        )
    return question.strip()


def _plain(timings: TimingsData) -> dict[str, float | None]:
    return cast("dict[str, float | None]", timings)
