"""A model reply: held back while it can still be the refusal sentence, asked once more after a refusal.

The service runs against a real index in tmp_path and a scripted OpenAI server on a real socket."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from citedocs.answer.citations import could_be_refusal
from citedocs.answer.generation import RefusalHold
from citedocs.answer.prompt import REFUSAL_SENTENCE, REFUSAL_SENTENCES
from citedocs.llm.client import LLMClient
from citedocs.service import Citedocs
from citedocs.settings import Settings
from fakes.openai_server import FakeOpenAI, Reply

QUESTION = "Which port does the server listen on by default?"
ANSWER = ["The server listens", " on port 8765", " by default [1]."]


@pytest.fixture
def library(tmp_path: Path) -> Citedocs:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "install.md").write_text(
        "# Installation\n\nInstall citedocs with `pipx install citedocs`. The server listens on port 8765 by "
        "default.\n",
        encoding="utf-8",
    )
    app = Citedocs(Settings(db=str(tmp_path / "index.sqlite3"), embedder="none", llm_read_timeout_s=2.0))
    app.add_folder(docs)
    app.index()
    return app


def events(library: Citedocs, server: FakeOpenAI) -> list[tuple[str, dict[str, object]]]:
    async def go() -> list[tuple[str, dict[str, object]]]:
        async with LLMClient(server.base_url, "fake", read_timeout_s=2.0, backoff_s=0.01) as llm:
            service = library.answer_service(llm)
            return [(e.event, e.data) async for e in service.stream(QUESTION)]

    try:
        return asyncio.run(go())
    finally:
        library.close()


def tokens(seen: list[tuple[str, dict[str, object]]]) -> str:
    return "".join(str(data["text"]) for name, data in seen if name == "token")


@pytest.mark.parametrize(
    ("text", "held"),
    [
        ("", True),
        ("I", True),
        ("I can", True),
        ("I cannot answer", True),
        (REFUSAL_SENTENCE, True),
        (REFUSAL_SENTENCES["ja"][:4], True),
        ("The server", False),
        ("I think the port", False),
        ("Port 8765 [1].", False),
        (
            REFUSAL_SENTENCE + " However, the sources describe installing it with pipx and the port [1].",
            False,
        ),
    ],
)
def test_what_could_still_become_the_refusal_sentence(text: str, held: bool) -> None:
    assert could_be_refusal(text) is held


def test_the_hold_lets_an_answer_through_at_its_first_words_and_keeps_a_refusal() -> None:
    answer = RefusalHold()
    assert answer.feed("I") == ""
    assert answer.feed(" think") == "I think"
    assert answer.feed(" so.") == " so."
    refusal = RefusalHold()
    assert [refusal.feed(p) for p in ("I can't", " answer that", " from the indexed documents.")] == [
        "",
        "",
        "",
    ]
    assert refusal.holding and refusal.release() == REFUSAL_SENTENCE


def test_a_refusal_then_an_answer_streams_only_the_answer(library: Citedocs) -> None:
    with FakeOpenAI(
        [Reply(tokens=["I can't answer", " that from the indexed documents."]), Reply(tokens=ANSWER)]
    ) as s:
        seen = events(library, s)
        asked = [r.body["messages"] for r in s.chat_requests]
    done = seen[-1][1]
    assert len(asked) == 2 and asked[0] == asked[1]  # the same prompt: llama.cpp reads it from its cache
    assert tokens(seen) == "".join(ANSWER)
    assert done["refused"] is False and done["answer"] == "The server listens on port 8765 by default [1]."
    assert done["citations"] == [1]


def test_two_refusals_are_one_refusal_shown_once(library: Citedocs) -> None:
    with FakeOpenAI(
        [
            Reply(tokens=[REFUSAL_SENTENCE]),
            Reply(tokens=["I can't", " answer that from the indexed documents."]),
        ]
    ) as s:
        seen = events(library, s)
        answers = [r for r in s.chat_requests if r.body.get("stream")]
        asks = [
            r for r in s.chat_requests if not r.body.get("stream")
        ]  # yes/no about quotes (answer/confirm.py)
        assert len(answers) == 2 and all(r.body["max_tokens"] == 3 for r in asks)
    assert tokens(seen) == REFUSAL_SENTENCE
    assert seen[-1][0] == "done" and seen[-1][1]["refused"] is True


def test_an_answer_is_not_asked_twice_and_streams_as_written(library: Citedocs) -> None:
    with FakeOpenAI([Reply(tokens=ANSWER), Reply(tokens=["unused"])]) as s:
        seen = events(library, s)
        assert len(s.chat_requests) == 1
    assert [data["text"] for name, data in seen if name == "token"] == ANSWER
