"""The best sentences (pure), the `evidence` event and llama.cpp's prompt cache."""

from __future__ import annotations

import asyncio
from pathlib import Path

from citedocs.answer.evidence import best_sentences, line_span
from citedocs.answer.prepared import EVIDENCE_NOTE
from citedocs.hits import Hit
from citedocs.llm.client import Finish, LLMClient
from citedocs.service import Citedocs
from citedocs.settings import Settings
from fakes.openai_server import FakeOpenAI, Reply

FILLER = [f"Paragraph {i} talks about colours of the user interface and nothing else." for i in range(30)]


def hit(text: str, path: str = "/docs/setup.md", heading: str = "Setup > Server", line_start: int = 1) -> Hit:
    lines = text.count("\n") + 1
    return Hit("c" + path[-6:], path, "/docs", heading, None, line_start, line_start + lines - 1, 1.0, text)


def long_passage() -> str:
    return "\n\n".join([*FILLER[:12], "The server listens on port 8765 by default.", *FILLER[12:]])


def test_the_best_sentence_names_its_source_number_and_exact_lines() -> None:
    passages = [hit("\n\n".join(FILLER), "/docs/ui.md", line_start=1), hit(long_passage(), line_start=40)]
    best = best_sentences("Which port does the server listen on?", passages, 1)
    assert [(b.n, b.path, b.text) for b in best] == [
        (2, "/docs/setup.md", "The server listens on port 8765 by default.")
    ]
    # An exact slice of the passage, on the line the file has it (one blank line between paragraphs).
    assert (best[0].line_start, best[0].line_end) == (40 + 2 * 12, 40 + 2 * 12)


def test_a_sentence_two_passages_both_hold_is_shown_once() -> None:
    said = "Set CITEDOCS_MAX_CONCURRENT to limit the answers in flight."
    passages = [hit(f"Intro.\n\n{said}"), hit(f"{said}\n\nOther words.", "/docs/limits.md")]
    best = best_sentences("How do I limit the answers in flight?", passages)
    assert best[0].text == said and [b.text for b in best].count(said) == 1


def test_japanese_question_finds_the_japanese_sentence() -> None:
    text = "\n\n".join(
        ["画面の色は設定で変えられます。", "古いログは 30 日後に削除されます。", "テーマは三種類あります。"]
    )
    passages = [hit(text, "/docs/logs.md", "ログ")]
    best = best_sentences("古いログはいつ削除されますか？", passages, 1)
    assert [b.text for b in best] == ["古いログは 30 日後に削除されます。"]
    assert (best[0].line_start, best[0].line_end) == (3, 3)


def test_a_plain_heading_line_counts_as_the_heading_not_as_part_of_the_sentence_after_it() -> None:
    # HTML passages hold their headings as plain lines; glued to the next sentence, the heading's words
    # counted twice for it (as its own and as its heading's) and it was shown with the heading in it.
    ja = hit(
        "ログの削除\n画面の色は設定で変えられます。\n古いログは 30 日後に削除されます。",
        "/docs/ops.html",
        "運用 > ログの削除",
    )
    assert [b.text for b in best_sentences("ログの削除はいつ？", [ja], 1)] == [
        "古いログは 30 日後に削除されます。"
    ]
    en = hit(
        "Log removal\nColours are set in the theme.\nOld logs are removed after 30 days.",
        "/a.html",
        "Ops > Log removal",
    )
    assert [b.text for b in best_sentences("When does log removal happen?", [en], 1)] == [
        "Old logs are removed after 30 days."
    ]


def test_line_span_widens_where_the_passage_has_blank_lines_the_file_lacks() -> None:
    # The file has "# Title" right above its text (2 lines); the chunker put a blank line between (3 lines).
    passage = Hit("c1", "/d/a.md", "/d", "Title", None, 10, 11, 1.0, "# Title\n\nBody text.")
    start = passage.text.index("Body")
    first, last = line_span(passage, start, len(passage.text))
    assert first <= 11 <= last and first >= 10 and last <= 11


# -- the service: the `evidence` event before the model, and the prompt cache ------------------------------


def _library(tmp_path: Path) -> Citedocs:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "setup.md").write_text("# Setup\n\n## Server\n\n" + long_passage() + "\n", encoding="utf-8")
    (docs / "ui.md").write_text("# Look\n\n" + "\n\n".join(FILLER) + "\n", encoding="utf-8")
    settings = Settings(db=str(tmp_path / "i.sqlite3"), embedder="none")
    app = Citedocs(settings)
    app.add_folder(docs)
    app.index()
    return app


def test_evidence_event_comes_before_the_model_is_asked_and_the_model_reads_whole_passages(
    tmp_path: Path,
) -> None:
    app = _library(tmp_path)
    try:
        with FakeOpenAI([Reply(tokens=["Port 8765 [1]."])]) as server:

            async def go() -> list[tuple[str, int]]:
                seen = []
                async with LLMClient(server.base_url, "fake", read_timeout_s=2) as llm:
                    async for event in app.answer_service(llm).stream(
                        "Which port does the server listen on?"
                    ):
                        seen.append((event.event, len(server.chat_requests)))
                        if event.event == "evidence":
                            data = event.data
                            assert data["note"] == EVIDENCE_NOTE and "not the answer" in data["note"]
                            first = data["evidence"][0]
                            assert "8765" in first["text"] and first["n"] >= 1
                            assert (
                                first["path"].endswith("setup.md")
                                and first["line_end"] >= first["line_start"]
                            )
                return seen

            seen = asyncio.run(go())
            prompt = server.chat_requests[0].body["messages"][-1]["content"]
    finally:
        app.close()
    names = [name for name, _ in seen]
    assert names[:2] == ["sources", "evidence"] and names[-1] == "done" and "token" in names
    assert dict(seen)["evidence"] == 0  # no model request had been made yet
    assert "port 8765" in prompt


def test_an_off_topic_question_gets_an_empty_evidence_event_and_no_model_call(tmp_path: Path) -> None:
    app = _library(tmp_path)
    try:
        with FakeOpenAI() as server:

            async def go() -> dict[str, object]:
                async with LLMClient(server.base_url, "fake") as llm:
                    events = [e async for e in app.answer_service(llm).stream("Best lasagna recipe?")]
                return {e.event: e.data for e in events}

            data = asyncio.run(go())
            assert server.chat_requests == []
    finally:
        app.close()
    assert data["evidence"]["evidence"] == [] and data["done"]["refused_before_model"] is True  # type: ignore[index]


def test_cache_prompt_is_sent_only_to_a_server_that_showed_it_is_llama_cpp() -> None:
    timings = {"prompt_n": 120, "cache_n": 180, "prompt_ms": 2500.0}
    with FakeOpenAI(
        [Reply(tokens=["a"]), Reply(tokens=["b"], timings=timings), Reply(tokens=["c"])]
    ) as server:

        async def go() -> list[Finish]:
            finishes = []
            async with LLMClient(server.base_url, "fake") as llm:
                for _ in range(3):
                    async for event in llm.stream_chat(
                        [{"role": "user", "content": "q"}], max_tokens=5, temperature=0
                    ):
                        if isinstance(event, Finish):
                            finishes.append(event)
            return finishes

        finishes = asyncio.run(go())
        bodies = [r.body for r in server.chat_requests]
    assert "cache_prompt" not in bodies[0] and "cache_prompt" not in bodies[1]
    assert bodies[2]["cache_prompt"] is True
    assert finishes[0].server_timings is None and finishes[1].server_timings == timings


NOISY = hit(
    "## Server port\n\n"
    "| port | 8765 | the **HTTP API** |\n"
    '{"port": 8765, "host": "127.0.0.1", "tls": false}\n\n'
    "The server listens on **port 8765** by default.\n\n"
    "The server listens on port 8765 by default."
)


def test_the_evidence_sentences_are_readable_and_said_once_but_quotes_stay_verbatim() -> None:
    from citedocs.answer.quotes import choose_quotes

    question = "Which port does the server listen on?"
    texts = [w.text for w in best_sentences(question, [NOISY], 5)]
    assert "The server listens on port 8765 by default." in texts
    assert texts.count("The server listens on port 8765 by default.") == 1
    assert all("**" not in t and "|" not in t and "{" not in t and not t.startswith("#") for t in texts)
    for window in best_sentences(question, [NOISY], 5):  # each still says where it stands verbatim
        assert 1 <= window.line_start <= window.line_end <= NOISY.line_end
    quotes = choose_quotes(question, [NOISY])
    assert quotes and all(NOISY.text[q.start : q.end] == q.text for q in quotes)
