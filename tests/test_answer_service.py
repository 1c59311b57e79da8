"""AnswerService against a real index in tmp_path and a scripted OpenAI server on a real socket."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from citedocs.answer.events import AnswerEvent, collect
from citedocs.answer.prompt import REFUSAL_SENTENCE, REFUSAL_SENTENCES
from citedocs.answer.retriever import McpRetriever
from citedocs.answer.service import AnswerFailed, AnswerService, validate_question
from citedocs.answer.stats import RollingStats, percentile
from citedocs.errors import InputError
from citedocs.llm.client import LLMClient
from citedocs.service import Citedocs
from citedocs.settings import Settings
from fakes.openai_server import FakeOpenAI, Reply

T = TypeVar("T")

PORT_QUESTION = "Which port does the server listen on by default?"
PORT_ANSWER = ["The server listens", " on port 8765", " by default [1]."]

DOCS = {
    "install.md": "# Installation\n\n## Linux\n\nInstall citedocs with `pipx install citedocs`. The server "
    "listens on port 8765 by default.\n",
    "config.md": "# Configuration\n\n## Limits\n\nSet CITEDOCS_MAX_CONCURRENT to limit the answers in flight. "
    "The default limit is 4 answers at once.\n",
}


def write_corpus(root: Path) -> Path:
    docs = root / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    return docs


@pytest.fixture
def library(tmp_path: Path) -> Iterator[Citedocs]:
    settings = Settings(db=str(tmp_path / "index.sqlite3"), embedder="none", llm_read_timeout_s=0.5)
    app = Citedocs(settings)
    app.add_folder(write_corpus(tmp_path))
    app.index()
    yield app
    app.close()


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def fast_client(server: FakeOpenAI) -> LLMClient:
    return LLMClient(server.base_url, "fake", read_timeout_s=0.5, backoff_s=0.01, max_retries=2)


async def events_of(
    library: Citedocs, server: FakeOpenAI, question: str = PORT_QUESTION
) -> list[AnswerEvent]:
    async with fast_client(server) as llm:
        service = library.answer_service(llm)
        return [event async for event in service.stream(question)]


def assert_one_terminal(events: list[AnswerEvent]) -> AnswerEvent:
    assert events[0].event == "sources"
    assert [e.terminal for e in events].count(True) == 1
    assert events[-1].terminal
    return events[-1]


def test_cited_answer_streams_sources_tokens_then_done(library: Citedocs) -> None:
    with FakeOpenAI([Reply(tokens=PORT_ANSWER)]) as server:
        events = run(events_of(library, server))
    done = assert_one_terminal(events)
    assert done.event == "done"
    sources = events[0].data["sources"]
    assert sources[0]["n"] == 1 and sources[0]["path"].endswith("install.md")
    assert set(sources[0]) >= {
        "n",
        "path",
        "source",
        "heading",
        "page",
        "line_start",
        "line_end",
        "chunk_id",
        "score",
        "text",
    }
    assert [e.data["text"] for e in events if e.event == "token"] == PORT_ANSWER
    assert done.data["answer"] == "The server listens on port 8765 by default [1]."
    assert done.data["citations"] == [1] and done.data["invalid_citations"] == []
    assert done.data["refused"] is False and done.data["truncated"] is False
    assert set(done.data["timings"]) == {"retrieval_ms", "fetch_ms", "ttft_ms", "generation_ms", "total_ms"}
    assert done.data["timings"]["ttft_ms"] <= done.data["timings"]["total_ms"]
    assert done.data["usage"]["completion_tokens"] == 3
    assert len(done.data["trace_id"]) == 32
    assert done.data["sentences"][0]["supported"] is True
    prompt = server.chat_requests[0].body["messages"][-1]["content"]
    assert "port 8765" in prompt and PORT_QUESTION in prompt


def test_off_topic_question_is_refused_without_calling_the_model(library: Citedocs) -> None:
    with FakeOpenAI() as server:
        events = run(events_of(library, server, "What is a good lasagna recipe with spinach?"))
        assert server.chat_requests == []
    done = assert_one_terminal(events)
    assert done.data["refused"] is True and done.data["refused_before_model"] is True
    assert done.data["answer"] == REFUSAL_SENTENCE
    assert done.data["refusal_reason"]


LONG_QUESTION = (
    "Which default port does the citedocs server listen on after I install it with pipx on Linux, for my team of "
    "designers and accountants who share one quarterly budget spreadsheet during the winter holidays?"
)


def test_a_long_question_whose_passage_holds_five_of_its_terms_reaches_the_model(library: Citedocs) -> None:
    with FakeOpenAI([Reply(tokens=PORT_ANSWER)]) as server:
        events = run(events_of(library, server, LONG_QUESTION))
        assert len(server.chat_requests) == 1
    done = assert_one_terminal(events)
    # under half of the question's terms: the share alone would have refused it before the model
    assert done.data["relevance"] <= 0.5
    assert done.data["refused"] is False
    assert done.data["answer"] == "The server listens on port 8765 by default [1]."


def test_a_question_naming_what_no_passage_writes_never_reaches_the_model(library: Citedocs) -> None:
    """The passages hold the port and the server but never `listen_backlog`: asked, the 1.5B model answers
    such a question from them; the gate refuses it first and says which name is missing."""
    with FakeOpenAI([Reply(tokens=PORT_ANSWER)]) as server:
        events = run(events_of(library, server, "Which port does the server listen on for listen_backlog?"))
        assert server.chat_requests == []
    done = assert_one_terminal(events)
    assert done.data["refused"] is True and done.data["refused_before_model"] is True
    assert "`listen_backlog`" in done.data["refusal_reason"] and done.data["quotes"] == []
    assert done.data["missing_names"] == ["listen_backlog"]


def test_model_replying_with_the_refusal_sentence_is_a_refusal(library: Citedocs) -> None:
    with FakeOpenAI([Reply(tokens=[REFUSAL_SENTENCE])], default=Reply(tokens=[REFUSAL_SENTENCE])) as server:
        events = run(events_of(library, server))
        # asked once more (answer/generation.py); then only yes/no asks about single sentences (answer/confirm.py)
        assert len([r for r in server.chat_requests if r.body.get("stream")]) == 2
    done = assert_one_terminal(events)
    assert done.data["refused"] is True and done.data["refused_before_model"] is False
    assert done.data["citations"] == []


def test_invalid_citation_is_reported_and_removed(library: Citedocs) -> None:
    with FakeOpenAI([Reply(tokens=["The server listens on port 8765 by default [9]."])]) as server:
        done = run(events_of(library, server))[-1]
    assert done.data["invalid_citations"] == [9]
    assert "[9]" not in done.data["answer"] and "[9]" in done.data["raw_answer"]
    assert done.data["citations"] == [1]


def test_unsupported_sentence_is_marked_in_the_answer_and_raw_answer_is_kept(library: Citedocs) -> None:
    raw = "The server listens on port 8765 by default [1]. It encrypts every answer with AES-256 [1]."
    with FakeOpenAI([Reply(tokens=[raw])]) as server:
        done = run(events_of(library, server))[-1]
    assert done.event == "done" and done.data["raw_answer"] == raw
    assert done.data["answer"] == (
        "The server listens on port 8765 by default [1]. It encrypts every answer with AES-256 [1] [unverified]."
    )
    assert [s["supported"] for s in done.data["sentences"]] == [True, False]
    assert done.data["citations"] == [1]


MADE_UP = (
    "To install it, clone the repository from GitHub [1]. Then run python server.py in a terminal [1]. "
    "The server listens on port 8765 by default [1]."
)


def test_an_answer_its_sources_mostly_do_not_hold_is_withheld_as_a_refusal(library: Citedocs) -> None:
    """What a small model makes up when the documents lack the answer fails the check sentence by sentence:
    fewer than half held means the refusal is sent (the tokens streamed meanwhile are replaced by `done`)."""
    with FakeOpenAI([Reply(tokens=[MADE_UP])]) as server:
        events = run(events_of(library, server))
    done = assert_one_terminal(events)
    assert [e.event for e in events].count("token") >= 1
    assert done.data["refused"] is True and done.data["refused_before_model"] is False
    assert done.data["answer"] == REFUSAL_SENTENCE and done.data["citations"] == []
    assert done.data["raw_answer"] == MADE_UP
    assert "only 1 of 3 checked sentences" in done.data["refusal_reason"]
    assert [s["supported"] for s in done.data["sentences"]] == [False, False, True]
    # the synthesis is withheld: what the sources say is the answer, labelled as quotes
    assert done.data["quotes_label"] == "What the sources say"
    assert [q["text"] for q in done.data["quotes"]] == ["The server listens on port 8765 by default."]


@pytest.mark.parametrize("reply", [["[1]", "[2]"], [" "]])
def test_a_reply_of_citation_marks_or_nothing_is_withheld(library: Citedocs, reply: list[str]) -> None:
    """The 1.5B model once answered an unanswerable question with "[1][4]" alone: a reader was shown two marks
    as the answer. A reply with no words is withheld like an unsupported one; the quotes are the answer."""
    with FakeOpenAI([Reply(tokens=reply)]) as server:
        events = run(events_of(library, server))
    done = assert_one_terminal(events)
    assert done.data["refused"] is True and done.data["refused_before_model"] is False
    assert done.data["answer"] == REFUSAL_SENTENCE and done.data["citations"] == []
    said = "only citation marks" if "".join(reply).strip() else "nothing"
    assert done.data["refusal_reason"] == f"the model's answer held no words ({said}), so it was withheld"
    assert done.data["quotes_label"] == "What the sources say"


def test_done_quotes_what_the_synthesis_leaves_out_verbatim_with_its_source_and_line(
    library: Citedocs,
) -> None:
    question = "How do I install citedocs, and which port does the server listen on by default?"
    with FakeOpenAI([Reply(tokens=PORT_ANSWER)]) as server:
        events = run(events_of(library, server, question))
    done = assert_one_terminal(events)
    assert done.data["refused"] is False and done.data["quotes_label"] is None
    (quote,) = done.data["quotes"]
    assert quote["text"] == "Install citedocs with `pipx install citedocs`."
    source = events[0].data["sources"][quote["n"] - 1]
    assert source["path"].endswith("install.md") and quote["path"] == source["path"]
    assert quote["text"] in source["text"] and quote["line"] == 5 and quote["page"] is None
    off_topic = run(events_of(library, server, "What is a good lasagna recipe with spinach?"))[-1]
    assert off_topic.data["refused_before_model"] is True and off_topic.data["quotes"] == []


def test_server_error_before_first_token_is_retried(library: Citedocs) -> None:
    with FakeOpenAI([Reply.error(500), Reply(tokens=PORT_ANSWER)]) as server:
        done = run(events_of(library, server))[-1]
        assert len(server.chat_requests) == 2
    assert done.event == "done"


def test_stall_mid_stream_is_an_error_with_the_partial_text(library: Citedocs) -> None:
    with FakeOpenAI([Reply(tokens=PORT_ANSWER, stall_after=1)], stall_limit_s=5) as server:
        events = run(events_of(library, server))
        assert len(server.chat_requests) == 1
    error = assert_one_terminal(events)
    assert error.event == "error" and error.data["stage"] == "generation"
    assert error.data["partial"] == PORT_ANSWER[0]
    assert "sent nothing" in error.data["message"] and error.data["hint"]


@pytest.mark.parametrize(
    ("reply", "streamed"),
    [
        (Reply(tokens=PORT_ANSWER, finish_reason=None, send_done=False), 3),
        (Reply(tokens=PORT_ANSWER, error_after=2), 2),
        (Reply(tokens=PORT_ANSWER, abort_after=2), 2),
    ],
    ids=["no-finish", "error-chunk", "dropped"],
)
def test_broken_stream_is_an_error_never_a_short_answer(
    library: Citedocs, reply: Reply, streamed: int
) -> None:
    with FakeOpenAI([reply]) as server:
        events = run(events_of(library, server))
    error = assert_one_terminal(events)
    assert error.event == "error" and error.data["stage"] == "generation"
    assert error.data["partial"] == "".join(PORT_ANSWER[:streamed])


def test_length_cut_is_truncated(library: Citedocs) -> None:
    with FakeOpenAI([Reply(tokens=PORT_ANSWER[:2], finish_reason="length")]) as server:
        done = run(events_of(library, server))[-1]
    assert done.event == "done" and done.data["truncated"] is True


def test_unknown_source_is_a_retrieval_error_event(library: Citedocs) -> None:
    async def go() -> list[AnswerEvent]:
        service = library.answer_service(None)
        return [e async for e in service.stream(PORT_QUESTION, source="no-such-folder")]

    events = run(go())
    assert len(events) == 1 and events[0].data["stage"] == "retrieval"
    assert "citedocs list" in events[0].data["hint"]


def test_answer_collects_or_raises(library: Citedocs) -> None:
    async def go(script: list[Reply]) -> dict[str, Any]:
        with FakeOpenAI(script) as server:
            async with fast_client(server) as llm:
                return await library.answer_service(llm).answer(PORT_QUESTION)

    data = run(go([Reply(tokens=PORT_ANSWER)]))
    assert data["sources"][0]["n"] == 1 and data["citations"] == [1]
    with pytest.raises(AnswerFailed) as failure:
        run(go([Reply.error(400, "bad request")]))
    assert failure.value.stage == "generation" and failure.value.data["upstream_status"] == 400


def test_closing_the_stream_cancels_the_upstream_generation(library: Citedocs) -> None:
    slow = Reply(tokens=[f"word{i} " for i in range(200)], delay_s=0.05)

    async def go(server: FakeOpenAI) -> AnswerService:
        async with fast_client(server) as llm:
            service = library.answer_service(llm)
            async with contextlib.aclosing(service.stream(PORT_QUESTION)) as events:
                async for event in events:
                    if event.event == "token":
                        break
            return service

    with FakeOpenAI([slow]) as server:
        service = run(go(server))
        request = server.wait_finished(0)
    assert request.disconnected and request.tokens_sent < 200
    assert service.stats.snapshot()["cancelled"] == 1


def test_stats_window_counts_outcomes_and_percentiles(library: Citedocs) -> None:
    async def go(server: FakeOpenAI) -> dict[str, Any]:
        async with fast_client(server) as llm:
            service = library.answer_service(llm, stats=RollingStats(window=3))
            for question in (PORT_QUESTION, "lasagna recipe with spinach?", PORT_QUESTION, PORT_QUESTION):
                with contextlib.suppress(AnswerFailed):
                    await service.answer(question)
            return service.stats.snapshot()

    script = [Reply(tokens=PORT_ANSWER), Reply.error(401), Reply(tokens=PORT_ANSWER)]
    with FakeOpenAI(script) as server:
        stats = run(go(server))
    assert stats["answers_since_start"] == 4 and stats["answers"] == 3
    assert stats["refusals"] == 1 and stats["errors_by_stage"] == {"generation": 1}
    assert stats["answered"] == 1 and stats["timings_ms"]["ttft_ms"]["n"] == 1
    assert stats["tokens"]["completion_total"] == 3


def test_percentile_interpolates() -> None:
    assert percentile([], 50) is None
    assert percentile([10.0], 95) == 10.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert percentile(list(range(101)), 95) == 95.0


def test_question_validation() -> None:
    with pytest.raises(InputError):
        validate_question("   ")
    with pytest.raises(InputError, match="at most 2000"):
        validate_question("x" * 2001)


def test_collect_without_terminal_event_fails() -> None:
    async def only_sources() -> Any:
        yield AnswerEvent("sources", {"sources": []})

    with pytest.raises(AnswerFailed):
        run(collect(only_sources()))


def test_one_trace_per_answer_with_retrieval_generation_and_first_token(library: Citedocs) -> None:
    pytest.importorskip("opentelemetry.sdk", reason="needs opentelemetry-sdk for tracing")
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from citedocs.answer.telemetry import OtelTracer

    exporter = InMemorySpanExporter()
    tracer = OtelTracer.with_processor(SimpleSpanProcessor(exporter))

    async def go(server: FakeOpenAI) -> dict[str, Any]:
        async with fast_client(server) as llm:
            return await library.answer_service(llm, tracer=tracer).answer(PORT_QUESTION)

    with FakeOpenAI([Reply(tokens=PORT_ANSWER)]) as server:
        data = run(go(server))
    tracer.shutdown()
    spans = {span.name: span for span in exporter.get_finished_spans()}
    assert set(spans) == {"citedocs.answer", "retrieval", "generation"}
    assert {format(s.context.trace_id, "032x") for s in spans.values()} == {data["trace_id"]}
    # the model checks the answer's sentences after the last token (answer/model_check.py)
    assert [e.name for e in spans["generation"].events] == ["first_token", "sentences_checked"]
    assert spans["generation"].parent.span_id == spans["citedocs.answer"].context.span_id


def _children_running(needle: str) -> list[int]:
    """Pids of this process's children whose command line contains `needle` (Linux /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text(encoding="utf-8").rsplit(")", 1)[1].split()[1])
            cmdline = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except (OSError, ValueError, IndexError):
            continue
        if ppid == os.getpid() and needle in cmdline:
            found.append(int(stat.parent.name))
    return found


@pytest.mark.slow
def test_answers_through_an_mcp_search_server_that_is_reconnected_after_it_dies(library: Citedocs) -> None:
    if not Path("/proc/self/stat").exists():
        pytest.skip("needs /proc to find the MCP server's process")
    library.close()
    command = [sys.executable, "-m", "citedocs.mcp", "--db", str(library.settings.db_path), "--read-only"]
    retriever = McpRetriever(command, env={**os.environ, "CITEDOCS_EMBEDDER": "none"}, timeout_s=60)

    async def go(server: FakeOpenAI) -> tuple[dict[str, Any], dict[str, Any]]:
        async with fast_client(server) as llm:
            service = AnswerService(retriever, llm, library.settings)
            first = await service.answer(PORT_QUESTION)
            for pid in _children_running("citedocs.mcp"):
                os.kill(pid, signal.SIGKILL)
            second = await service.answer(PORT_QUESTION)
            await retriever.aclose()
            return first, second

    with FakeOpenAI(default=Reply(tokens=PORT_ANSWER)) as server:
        first, second = run(go(server))
    for data in (first, second):
        assert data["sources"][0]["path"].endswith("install.md") and data["sources"][0]["text"]
        assert data["citations"] == [1]
    assert retriever.reconnects == 1


def test_a_passage_copied_into_another_file_is_read_once(tmp_path: Path) -> None:
    docs = write_corpus(tmp_path)
    (docs / "copy.md").write_text(
        "# Installation notes\n\n" + DOCS["install.md"].split("\n\n", 2)[2], encoding="utf-8"
    )
    app = Citedocs(Settings(db=str(tmp_path / "index.sqlite3"), embedder="none"))
    try:
        app.add_folder(docs)
        app.index()
        with FakeOpenAI([Reply(tokens=PORT_ANSWER)]) as server:
            events = run(events_of(app, server))
            prompt = server.chat_requests[0].body["messages"][-1]["content"]
        paths = [Path(s["path"]).name for s in events[0].data["sources"]]
        assert {"install.md", "copy.md"} & set(paths)
        assert len({"install.md", "copy.md"} & set(paths)) == 1
        assert prompt.count("pipx install citedocs") == 1
        assert [s["n"] for s in events[0].data["sources"]] == list(range(1, len(paths) + 1))
        assert events[-1].data["citations"] == [1]
    finally:
        app.close()


def test_an_answer_that_loops_is_stopped_and_keeps_one_copy(library: Citedocs) -> None:
    sentence = ["The server listens", " on port 8765", " by default [1].", "\n"]
    looping = Reply(tokens=sentence * 100, delay_s=0.01)
    with FakeOpenAI([looping]) as server:
        events = run(events_of(library, server))
        request = server.wait_finished(0)
    done = assert_one_terminal(events).data
    assert done["finish_reason"] == "repetition" and not done["truncated"] and not done["refused"]
    assert done["answer"] == "The server listens on port 8765 by default [1]." and done["citations"] == [1]
    assert done["usage"]["estimated"] and done["usage"]["completion_tokens"] < 40
    # the upstream generation was stopped, not read to its end
    assert request.disconnected and request.tokens_sent < 60


JA_QUESTION = "遅延アップロードは何日まで指定できる？ dput のオプションは？"


def _japanese_library(tmp_path: Path) -> Citedocs:
    docs = tmp_path / "ja"
    docs.mkdir()
    (docs / "upload.md").write_text(
        "# 遅延アップロード\n\n遅延アップロードには DELAYED キューを使います。"
        "アップロード先は DELAYED/X-day ディレクトリで、X は 0 から 15 の間です。"
        "dput では --delayed オプションで日数を指定します。\n",
        encoding="utf-8",
    )
    app = Citedocs(Settings(db=str(tmp_path / "ja.sqlite3"), embedder="none"))
    app.add_folder(docs)
    app.index()
    return app


def test_a_japanese_answer_gets_japanese_quotes_cut_at_sentence_ends(tmp_path: Path) -> None:
    app = _japanese_library(tmp_path)
    try:
        answer = "dput の --delayed オプションで日数を指定します [1]。"
        with FakeOpenAI([Reply(tokens=[answer])]) as server:
            done = run(events_of(app, server, JA_QUESTION))[-1]
    finally:
        app.close()
    assert done.event == "done" and not done.data["refused"]
    texts = [q["text"] for q in done.data["quotes"]]
    assert "アップロード先は DELAYED/X-day ディレクトリで、X は 0 から 15 の間です。" in texts
    assert all("--delayed" not in t for t in texts)  # the synthesis said it
    assert all(q["line"] == 3 and q["n"] == 1 for q in done.data["quotes"])


def test_the_model_refuses_a_japanese_question_in_english_and_the_reader_sees_the_japanese_refusal(
    tmp_path: Path,
) -> None:
    """The model is asked for the English refusal sentence whatever the question's language (asked for the
    Japanese one, the 1.5B model wrote it for answerable questions); the reader gets the refusal in Japanese,
    and it is what streams (the model's English sentence is kept as the raw answer)."""
    app = _japanese_library(tmp_path)
    try:
        english = Reply(tokens=["I can't answer ", "that from the indexed documents."])
        with FakeOpenAI([english], default=english) as server:
            events = run(events_of(app, server, JA_QUESTION))
            answers = [r for r in server.chat_requests if r.body.get("stream")]  # not the yes/no asks after
            prompts = [str(r.body["messages"][-1]["content"]) for r in answers]
    finally:
        app.close()
    done = assert_one_terminal(events)
    assert len(prompts) == 2  # asked once more, as in English
    assert all(REFUSAL_SENTENCE in p and REFUSAL_SENTENCES["ja"] not in p for p in prompts)
    assert all("Write the answer in Japanese" in p for p in prompts)
    assert done.data["refused"] is True and done.data["answer"] == REFUSAL_SENTENCES["ja"]
    assert [e.data["text"] for e in events if e.event == "token"] == [REFUSAL_SENTENCES["ja"]]
    assert done.data["raw_answer"] == "I can't answer that from the indexed documents."
