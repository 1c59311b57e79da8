"""The Ask tab as a conversation, in headless Chromium against the API on a real socket (static/thread.js):
three turns, each answer kept with its own checked citations, follow-ups sent with their history, start over."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from citedocs.answer.rewriter import REWRITE_SYSTEM
from citedocs.llm.client import LLMClient
from fakes.openai_server import FakeOpenAI, RecordedRequest, Reply
from test_web_page import browser, close, new_page, page_server, screenshot

__all__ = ["browser"]  # the fixture, shared with test_web_page.py

FIRST = "Which port does the server listen on by default?"
SECOND = "And how do I start it?"
THIRD = "Which address does it listen on then?"
ANSWERS = {
    FIRST: "The server listens on port 8765 by default [1].",
    SECOND: "Start the server with `citedocs serve` [1].",
    THIRD: "It listens on 127.0.0.1 [1].",
}


def respond(request: RecordedRequest) -> Reply:
    messages = request.body["messages"]
    if messages[0]["content"] == REWRITE_SYSTEM:
        last = messages[1]["content"].split("Follow-up:", 1)[1]
        return Reply(tokens=["citedocs server" if SECOND in last else "citedocs serve"])
    question = messages[1]["content"].split("<<<QUESTION", 1)[1]
    return Reply(tokens=[next(a for q, a in ANSWERS.items() if q in question)], delay_s=0.05)


def answers(fake: FakeOpenAI) -> list[str]:
    """The answer prompts the model got (not the rewrites)."""
    return [
        r.body["messages"][1]["content"]
        for r in fake.chat_requests
        if r.body["messages"][0]["content"] != REWRITE_SYSTEM
    ]


def ask_and_wait(page: Any, question: str, turn: int) -> None:
    page.fill("#question", question)
    page.keyboard.press("Enter")
    page.wait_for_function(f"document.querySelectorAll('#thread .turn').length === {turn - 1}")
    page.wait_for_selector("#answer:not(.streaming) .sent.ok")


def test_a_three_turn_thread_keeps_each_answer_with_its_own_citations(browser: Any, tmp_path: Path) -> None:
    with FakeOpenAI(responder=respond) as fake:
        llm = LLMClient(fake.base_url, "scripted")
        with page_server(tmp_path, llm=llm) as url, new_page(browser, url) as page:
            page.click("#tab-ask")
            assert page.locator("#new-conversation").is_hidden()
            ask_and_wait(page, FIRST, 1)
            assert page.inner_text("#current-question") == FIRST and page.locator("#thread").is_hidden()
            assert page.input_value("#question") == ""  # ready for the follow-up
            ask_and_wait(page, SECOND, 2)
            assert "Searched with the conversation" in page.inner_text("#thread-note")
            ask_and_wait(page, THIRD, 3)
            turns = page.locator("#thread .turn")
            assert turns.count() == 2
            assert (
                turns.nth(0).locator(".turn-q").inner_text() == FIRST and "8765" in turns.nth(0).inner_text()
            )
            assert turns.nth(1).locator(".turn-q").inner_text() == SECOND
            # each earlier answer keeps its checked sentences and cites its own sources, not this turn's
            assert turns.nth(0).locator(".sent.ok button.cite").count() == 1
            assert "install.md" in (turns.nth(0).locator("button.cite").first.get_attribute("title") or "")
            assert "serve.md" in (turns.nth(1).locator("button.cite").first.get_attribute("title") or "")
            assert "install.md" in turns.nth(0).locator(".source-list").inner_text()
            assert page.inner_text("#current-question") == THIRD and "127.0.0.1" in page.inner_text("#answer")
            screenshot(page, tmp_path, "ask-thread")
            turns.nth(0).locator("button.cite").first.click()  # opens the first turn's own source in context
            page.wait_for_selector("#sources #reader:not([hidden])")
            page.click("#new-conversation")
            assert (
                page.locator("#thread .turn").count() == 0 and page.locator("#new-conversation").is_hidden()
            )
            ask_and_wait(page, FIRST, 1)
        close(llm)
    prompts = answers(fake)
    assert len(prompts) == 4 and "CONVERSATION" not in prompts[0] and "CONVERSATION" not in prompts[3]
    assert f"Q: {FIRST}" in prompts[1] and f"Q: {SECOND}" not in prompts[1]
    assert f"Q: {FIRST}" in prompts[2] and f"Q: {SECOND}" in prompts[2]
    assert "A: Start the server with `citedocs serve`." in prompts[2]  # a summary, its [1] dropped
