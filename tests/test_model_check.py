"""answer/model_check.py: after an answer, the model is asked whether each sentence's passage says it, and the
sentences it says no to are left out. A real index in tmp_path, the answer service, and a scripted OpenAI
server on a real socket that answers the answer's prompt and each yes/no ask apart."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from citedocs.answer.citations import check_citations
from citedocs.answer.confirm import CONFIRM_SYSTEM
from citedocs.answer.events import AnswerEvent
from citedocs.answer.model_check import (
    MAX_ASKS,
    SPARE_SUPPORT,
    WITHHELD_REASON,
    check_answer,
    without_sentences,
)
from citedocs.answer.prompt import REFUSAL_SENTENCES
from citedocs.answer.quotes import QUOTES_LABEL
from citedocs.answer.support import JUDGE_SYSTEM
from citedocs.hits import Hit
from citedocs.llm.client import LLMClient
from citedocs.service import Citedocs
from conftest import last_answer_event, one_file_library
from fakes.openai_server import FakeOpenAI, RecordedRequest, Reply

SERVER = (
    "# Server\n\n"
    "The server listens on port 8080 by default. Set the PORT variable to change the port it listens on. "
    "The server writes its log to /var/log/app.log and rotates it every day.\n"
)
QUESTION = "Which port does the server listen on, and where is its log?"
COPIED = "The server listens on port 8080 by default [1]."
# most of its words are in the passage (the citation check lets it through), but the passage never says it
ADDED = "The PORT variable also changes the log file location [1]."
LOG = "The server writes its log to /var/log/app.log [1]."
ANSWER = f"{COPIED} {ADDED} {LOG}"


def hit(text: str = SERVER) -> Hit:
    return Hit(1, "/docs/server.md", "/docs", "Server", None, 1, 4, 1.0, text)


def asked_sentence(request: RecordedRequest) -> str:
    user = str(request.body["messages"][-1]["content"])
    return user.split("Sentence:\n<<<\n", 1)[1].split("\n>>>", 1)[0]


def model(answer: str, judge: Callable[[str], Reply]) -> Callable[[RecordedRequest], Reply]:
    """The answer's prompt (streamed) gets `answer`; a yes/no ask gets `judge(the sentence asked about)`."""

    def respond(request: RecordedRequest) -> Reply:
        if request.body.get("stream"):
            return Reply(tokens=[answer[:20], answer[20:]])
        return judge(asked_sentence(request))

    return respond


def no_to(*parts: str) -> Callable[[str], Reply]:
    return lambda sentence: Reply(tokens=["no" if any(p in sentence for p in parts) else "yes"])


@pytest.fixture
def library(tmp_path: Path) -> Iterator[Citedocs]:
    with one_file_library(tmp_path, "server.md", SERVER) as app:
        yield app


def answer(library: Citedocs, server: FakeOpenAI, question: str = QUESTION) -> AnswerEvent:
    return last_answer_event(library, server.base_url, question)


def check(answer_text: str, judge: Callable[[str], Reply], budget_s: float = 10.0) -> tuple[object, list]:
    async def go() -> tuple[object, list]:
        with FakeOpenAI(responder=model("", judge)) as server:
            async with LLMClient(server.base_url, "fake", max_retries=0) as llm:
                done = await check_answer(llm, answer_text, [hit()], budget_s=budget_s)
            return done, [r.body for r in server.chat_requests]

    return asyncio.run(go())


def test_the_sentence_the_model_says_no_to_is_left_out_and_the_rest_kept() -> None:
    done, asks = check(ANSWER, no_to("log file location"))
    assert done.left_out == (ADDED,)  # type: ignore[attr-defined]
    assert done.answer == f"{COPIED} {LOG}"  # type: ignore[attr-defined]
    assert done.withheld is False  # type: ignore[attr-defined]
    # copied and nearly whole sentences are not asked about: one ask, the judge's question, one passage window
    assert len(asks) == done.asked == 1  # type: ignore[attr-defined]
    assert asks[0]["messages"][0]["content"] == JUDGE_SYSTEM
    assert asks[0]["temperature"] == 0.0 and asks[0]["max_tokens"] == 3
    assert "listens on port 8080" in asks[0]["messages"][1]["content"]


def test_what_is_asked_about_is_what_the_citation_check_only_partly_holds() -> None:
    report = check_citations(ANSWER, [hit()])
    support = {s.sentence: s.support for s in report.sentences}
    assert support[ADDED] < SPARE_SUPPORT <= min(support[COPIED], support[LOG])
    assert all(s.supported for s in report.sentences)  # the lexical check alone would keep all three


@pytest.mark.parametrize(
    "judge",
    [
        lambda s: Reply(tokens=["yes"]),
        lambda s: Reply(tokens=["Maybe, it depends"]),
        lambda s: Reply(tokens=[" "]),
        lambda s: Reply.error(500),
    ],
    ids=["yes", "unclear", "empty", "server-error"],
)
def test_only_a_clear_no_leaves_a_sentence_out(judge: Callable[[str], Reply]) -> None:
    done, _ = check(ANSWER, judge)
    assert done.left_out == () and done.answer == ANSWER  # type: ignore[attr-defined]


def test_a_failed_ask_ends_the_asking() -> None:
    two = f"{ADDED} The PORT variable also renames the log file every hour [1]."
    done, asks = check(two, lambda s: Reply.error(500))
    assert done.left_out == () and len(asks) == 1  # type: ignore[attr-defined]


def test_a_slow_model_keeps_the_answer_as_it_was_within_the_budget() -> None:
    started = time.perf_counter()
    done, _ = check(ANSWER, lambda s: Reply(tokens=["no"], first_delay_s=3.0), budget_s=0.5)
    assert time.perf_counter() - started < 2.5
    assert done.left_out == () and done.asked == 0  # type: ignore[attr-defined]


def test_at_most_max_asks_are_made() -> None:
    many = " ".join(f"The PORT variable also changes log file number {i} [1]." for i in range(MAX_ASKS + 4))
    done, asks = check(many, lambda s: Reply(tokens=["yes"]))
    assert len(asks) == MAX_ASKS and done.left_out == ()  # type: ignore[attr-defined]


def test_an_uncited_sentence_no_passage_holds_is_left_out_without_asking() -> None:
    invented = "Kubernetes operators restart crashed pods automatically."
    done, asks = check(f"{COPIED} {invented}", lambda s: Reply(tokens=["yes"]))
    assert done.left_out == (invented,) and asks == []  # type: ignore[attr-defined]


def test_a_list_loses_the_item_without_leaving_its_marker() -> None:
    text = f"The server:\n\n- {COPIED}\n- {ADDED}\n- {LOG}\n\nThat is all."
    report = check_citations(text, [hit()])
    gone = [s for s in report.sentences if s.sentence == ADDED]
    assert without_sentences(text, gone) == f"The server:\n\n- {COPIED}\n- {LOG}\n\nThat is all."


def test_the_answer_a_reader_gets_leaves_the_sentence_out_and_says_so(library: Citedocs) -> None:
    with FakeOpenAI(responder=model(ANSWER, no_to("log file location"))) as server:
        done = answer(library, server)
        asks = [r.body for r in server.chat_requests if not r.body.get("stream")]
    data = done.data
    assert done.event == "done" and data["refused"] is False
    assert (
        "log file location" not in data["answer"] and "8080" in data["answer"] and "app.log" in data["answer"]
    )
    assert data["left_out"] == [ADDED]
    assert [s["left_out"] for s in data["sentences"]] == [False, True, False]
    assert data["raw_answer"] == ANSWER  # the model's words stay for the page to show what went
    assert data["citations"] == [1]
    assert len(asks) == 1 and asks[0]["messages"][0]["content"] == JUDGE_SYSTEM


def test_an_answer_the_model_finds_nowhere_is_withheld_and_the_quotes_answer(library: Citedocs) -> None:
    made_up = "The PORT variable also changes the log file location [1]. It rotates the port daily [1]."
    with FakeOpenAI(responder=model(made_up, lambda s: Reply(tokens=["no"]))) as server:
        done = answer(library, server)
        systems = [r.body["messages"][0]["content"] for r in server.chat_requests if not r.body.get("stream")]
    data = done.data
    assert done.event == "done" and data["refused"] is True
    assert data["refusal_reason"] == WITHHELD_REASON
    assert data["answer"] == REFUSAL_SENTENCES["en"]
    assert len(data["left_out"]) == 2
    # the model did answer: quotes are chosen as for an answer, and it is not asked to confirm them
    assert data["quotes"] and data["quotes_label"] == QUOTES_LABEL
    assert CONFIRM_SYSTEM not in systems and set(systems) == {JUDGE_SYSTEM}


def test_a_japanese_sentence_the_model_says_no_to_is_left_out(library: Citedocs, tmp_path: Path) -> None:
    passage = (
        "メンテナスクリプトは冪等でなければなりません。スクリプトはできる限りシンプルにしておきましょう。"
    )
    said = "メンテナスクリプトは冪等でなければなりません [1]。スクリプトは必ず Python で書かなければなりません [1]。"

    async def go() -> object:
        with FakeOpenAI(responder=model("", no_to("Python"))) as server:
            async with LLMClient(server.base_url, "fake", max_retries=0) as llm:
                return await check_answer(llm, said, [hit(passage)])

    done = asyncio.run(go())
    assert done.left_out == ("スクリプトは必ず Python で書かなければなりません [1]。",)  # type: ignore[attr-defined]
    assert done.answer == "メンテナスクリプトは冪等でなければなりません [1]。"  # type: ignore[attr-defined]


def test_the_marks_after_a_sentence_left_out_go_with_it() -> None:
    """A Japanese question mark ends the sentence before its `[unverified]` mark: left behind, the mark would
    seem to flag the sentence before it (answer-ja-11, c2efa191)."""
    text = "reject されたっぽい。 [1]送る順番に決まりはある？ [unverified] アップロード先は ftp.upload.debian.org です [1]。"
    passage = "アップロード先は ftp.upload.debian.org です。"
    report = check_citations(text, [hit(passage)])
    gone = [s for s in report.sentences if s.sentence.startswith("送る順番")]
    assert len(gone) == 1
    assert (
        without_sentences(text, gone)
        == "reject されたっぽい。 [1] アップロード先は ftp.upload.debian.org です [1]。"
    )
