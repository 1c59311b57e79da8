"""answer/confirm.py: after a refusal, the model is asked about single sentences; the ones it confirms are
quoted although they match the question loosely. A real index in tmp_path, the answer service, and a scripted
OpenAI server on a real socket that answers the answer's prompt and each yes/no ask apart."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from citedocs.answer.confirm import (
    CONFIRM_SYSTEM,
    MAX_ASKS,
    Confirmation,
    confirm_messages,
    confirm_quotes,
    says_yes,
)
from citedocs.answer.events import AnswerEvent
from citedocs.answer.prompt import REFUSAL_SENTENCE, REFUSAL_SENTENCES
from citedocs.answer.quotes import QUOTES_LABEL, choose_quotes, to_confirm
from citedocs.hits import Hit
from citedocs.llm.client import LLMClient
from citedocs.service import Citedocs
from conftest import last_answer_event, one_file_library
from fakes.openai_server import FakeOpenAI, RecordedRequest, Reply

# From the Debian developer's reference (../shared/data/ja-developers-reference, best-pkging-practices 6.5):
# the answer says "idempotent" (冪等), which the question never does.
IDEMPOTENT = (
    "メンテナスクリプトは冪等でなければなりません。これは、通常は 1 回呼ばれるスクリプトが 2 回呼ばれた場合、"
    "何も悪いことが起きないのを保証する必要があるという意味です。"
)
MAINTAINER_SCRIPTS = (
    "# 6.5. メンテナスクリプトのベストプラクティス\n\n"
    "Maintainer scripts include the files debian/postinst, debian/preinst, debian/prerm and debian/postrm.\n"
    f"{IDEMPOTENT}\n"
    "標準入出力はログの取得のためにリダイレクトされることがあります (例: パイプへ向けられる)。"
    "ですので、これらが tty であることに依存してはいけません。\n"
    "メンテナスクリプトは、できる限りシンプルなものにしておきましょう。\n"
)
QUESTION = "postinst みたいなメンテナスクリプトって、2回実行されても大丈夫なように書かないとダメ？"
ENGLISH_REFUSAL = Reply(tokens=["I can't answer ", "that from the indexed documents."])


def hit(text: str) -> Hit:
    return Hit("c1", "/docs/scripts.md", "docs", "6.5", None, 3, 3 + text.count("\n"), 1.0, text)


@pytest.mark.parametrize(
    ("reply", "yes"),
    [
        ("yes", True),
        ("Yes.", True),
        ("  YES, it does", True),
        ("はい", True),
        ("no", False),
        ("No.", False),
        ("", False),
        ("yesterday", False),
        ("The sentence says yes", False),
        ("I can't answer that from the indexed documents.", False),
    ],
)
def test_only_a_reply_that_starts_with_yes_confirms(reply: str, yes: bool) -> None:
    assert says_yes(reply) is yes


def test_the_ask_holds_the_question_and_the_sentence_only() -> None:
    system, user = confirm_messages(QUESTION, IDEMPOTENT)
    assert system == {"role": "system", "content": CONFIRM_SYSTEM}
    assert user["role"] == "user" and QUESTION in user["content"] and IDEMPOTENT in user["content"]


def test_a_loose_match_is_quoted_after_a_refusal_only_when_confirmed() -> None:
    """The sentence that answers shares only メンテナスクリプト, 2 and 回 with the question (score 0.48): under
    the close-match bar a refusal keeps (0.6). It is what the model is asked about; confirmed, it is quoted."""
    hits = [hit(MAINTAINER_SCRIPTS)]
    assert choose_quotes(QUESTION, hits, model_refused=True) == []
    (pending,) = to_confirm(QUESTION, hits)
    assert pending.text == IDEMPOTENT
    (quote,) = choose_quotes(QUESTION, hits, model_refused=True, confirmed={IDEMPOTENT})
    assert quote.text == IDEMPOTENT and hits[0].text[quote.start : quote.end] == IDEMPOTENT
    # a confirmation names text, not a rank: something never offered is not quoted for it
    assert choose_quotes(QUESTION, hits, model_refused=True, confirmed={"unrelated"}) == []


ORPHAN_QUESTION = "もうメンテできなくなったパッケージを orphan（放棄）するには何をすればいい？"
# From the developer's reference (5.9.5): the close matches restate the question; the answer is an
# untranslated English sentence that shares one word with it.
ORPHANING = (
    "# 5.9.5. パッケージを放棄する\n\n"
    "パッケージのメンテナンスを続けられなくなった場合は、他の人にそれを知らせて、パッケージが放棄 (orphan) "
    "されたとわかるようにする必要があります。\n"
    "放棄されたパッケージのメンテナは Debian QA Group に設定されます。\n"
    "The bug report should be titled O: package -- short description indicating that the package is now "
    "orphaned.\n"
)
TITLE = (
    "The bug report should be titled O: package -- short description indicating that the package is now "
    "orphaned."
)


def test_the_pool_asked_about_holds_the_close_matches_and_what_is_below_them() -> None:
    hits = [hit(ORPHANING)]
    close = choose_quotes(ORPHAN_QUESTION, hits, model_refused=True)
    pool = to_confirm(ORPHAN_QUESTION, hits)
    assert close and {q.text for q in close} < {q.text for q in pool}
    assert TITLE in {q.text for q in pool} and TITLE not in {q.text for q in close}


def test_what_the_model_confirmed_is_shown_first_and_says_so() -> None:
    """A close match that only restates the question stays, after the sentence the model said answers."""
    hits = [hit(ORPHANING)]
    shown = choose_quotes(ORPHAN_QUESTION, hits, model_refused=True, confirmed={TITLE})
    assert shown[0].text == TITLE and shown[0].confirmed and shown[0].to_dict()["confirmed"] is True
    assert len(shown) > 1 and not any(q.confirmed for q in shown[1:])
    assert [q.text for q in shown[1:]] == [
        q.text for q in choose_quotes(ORPHAN_QUESTION, hits, model_refused=True)
    ]
    assert choose_quotes(ORPHAN_QUESTION, hits)[0].to_dict()["confirmed"] is False


def test_nothing_is_asked_when_no_sentence_comes_near_the_question() -> None:
    hits = [hit("Bananas are yellow and grow in bunches.\nApples are red.\n")]
    assert to_confirm(QUESTION, hits) == []


@pytest.fixture
def library(tmp_path: Path) -> Iterator[Citedocs]:
    with one_file_library(tmp_path, "scripts.md", MAINTAINER_SCRIPTS) as app:
        yield app


def model(confirm: Callable[[str], Reply]) -> Callable[[RecordedRequest], Reply]:
    """The answer's prompt (streamed) is refused; a yes/no ask gets `confirm(sentence asked about)`."""

    def respond(request: RecordedRequest) -> Reply:
        if request.body.get("stream"):
            return ENGLISH_REFUSAL
        user = str(request.body["messages"][-1]["content"])
        return confirm(user.split("Sentence: ", 1)[1].rsplit("\nDoes this sentence", 1)[0])

    return respond


def answer(library: Citedocs, server: FakeOpenAI) -> AnswerEvent:
    return last_answer_event(library, server.base_url, QUESTION)


def test_a_refused_answer_shows_the_sentence_the_model_confirms(library: Citedocs) -> None:
    with FakeOpenAI(responder=model(lambda s: Reply(tokens=["yes" if "冪等" in s else "no"]))) as server:
        done = answer(library, server)
        asks = [r.body for r in server.chat_requests if not r.body.get("stream")]
    assert done.event == "done" and done.data["refused"] is True
    assert done.data["answer"] == REFUSAL_SENTENCES["ja"]
    assert done.data["quotes_label"] == QUOTES_LABEL
    assert [q["text"] for q in done.data["quotes"]] == [IDEMPOTENT]
    assert done.data["quotes"][0]["confirmed"] is True
    assert done.data["quotes"][0]["path"].endswith("scripts.md") and done.data["quotes"][0]["line"] == 4
    assert 1 <= len(asks) <= MAX_ASKS
    assert all(a["temperature"] == 0.0 and a["max_tokens"] == 3 for a in asks)
    assert all(a["messages"][0]["content"] == CONFIRM_SYSTEM for a in asks)


@pytest.mark.parametrize(
    "confirm",
    [
        lambda s: Reply(tokens=["no"]),
        lambda s: Reply(tokens=[REFUSAL_SENTENCE]),
        lambda s: Reply.error(500),
        lambda s: Reply(tokens=[" "]),
    ],
    ids=["no", "refusal", "server-error", "empty"],
)
def test_without_a_confirmation_the_refusal_stands_as_before(
    library: Citedocs, confirm: Callable[[str], Reply]
) -> None:
    """A "no", an odd or empty reply, a failed ask: the loose match is not shown, and the refusal is still
    a `done` with its reason, not an error."""
    with FakeOpenAI(responder=model(confirm)) as server:
        done = answer(library, server)
    assert done.event == "done" and done.data["refused"] is True
    assert done.data["answer"] == REFUSAL_SENTENCES["ja"]
    assert done.data["quotes"] == []


def test_the_asks_stop_at_their_time_budget() -> None:
    """A model slow to say yes holds a refusal no longer than the budget: the slow ask is abandoned."""
    hits = [hit(MAINTAINER_SCRIPTS)]

    async def go() -> tuple[float, Confirmation]:
        with FakeOpenAI(default=Reply(tokens=["yes"], first_delay_s=3.0)) as server:
            async with LLMClient(server.base_url, "fake", max_retries=0) as llm:
                started = time.perf_counter()
                checked = await confirm_quotes(llm, QUESTION, to_confirm(QUESTION, hits), budget_s=0.5)
                return time.perf_counter() - started, checked

    took, checked = asyncio.run(go())
    assert took < 2.0 and checked.confirmed == frozenset() and checked.asked == 0


def test_an_answer_is_never_sent_to_be_confirmed(library: Citedocs) -> None:
    """Only a refusal adds an ask: an answered question costs the one streamed request."""
    said = Reply(tokens=["メンテナスクリプトは冪等でなければなりません [1]。"])
    with FakeOpenAI([said], default=Reply(tokens=["yes"])) as server:
        done = answer(library, server)
        assert len(server.chat_requests) == 1
    assert done.data["refused"] is False
