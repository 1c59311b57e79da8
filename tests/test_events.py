"""answer/events.py: every event an answer sends is one of the names defined there, and every `done` (answered,
withheld, refused before the model) carries exactly the fields of the typed payload, from the one builder."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import get_type_hints

from citedocs.answer.events import EVENT_NAMES, DoneData, ErrorData, done_data
from citedocs.answer.quotes import QUOTES_LABEL
from citedocs.llm.client import LLMClient
from citedocs.service import Citedocs
from citedocs.settings import Settings
from fakes.openai_server import FakeOpenAI, Reply

DOC = "# Install\n\n## Linux\n\nInstall with `pipx install citedocs`. The server listens on port 8765 by default.\n"


def test_every_done_has_exactly_the_typed_fields_and_every_event_a_defined_name(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "install.md").write_text(DOC, encoding="utf-8")
    app = Citedocs(Settings(db=str(tmp_path / "index.sqlite3"), embedder="none"))
    app.add_folder(tmp_path / "docs")
    app.index()
    replies = [
        Reply(tokens=["The server listens on port 8765 by default [1]."]),
        Reply(tokens=["Clone it from GitHub [1]. Run python server.py [1]."]),
    ]
    questions = [
        "Which port does the server listen on?",
        "How do I install the server?",
        "What is a good lasagna recipe with spinach?",
    ]

    async def main(url: str) -> list[list[tuple[str, dict[str, object]]]]:
        async with LLMClient(url, "scripted") as llm:
            service = app.answer_service(llm)
            return [[(e.event, e.data) async for e in service.stream(q)] for q in questions]

    try:
        with FakeOpenAI(replies) as fake:
            runs = asyncio.run(main(fake.base_url))
    finally:
        app.close()
    fields = set(get_type_hints(DoneData))
    dones = []
    for events in runs:
        assert {name for name, _ in events} <= set(EVENT_NAMES)
        name, data = events[-1]
        assert name == "done" and set(data) == fields
        dones.append(data)
    answered, withheld, refused = dones
    assert not answered["refused"] and answered["quotes_label"] is None
    assert withheld["refused"] and withheld["quotes_label"] == QUOTES_LABEL and withheld["quotes"]
    assert refused["refused_before_model"] and refused["quotes"] == [] and refused["quotes_label"] is None


def test_the_done_builder_labels_quotes_only_when_they_stand_for_the_answer() -> None:
    timings = {"retrieval_ms": 1.0, "fetch_ms": None, "ttft_ms": None, "generation_ms": None, "total_ms": 2.0}
    quote = {
        "text": "x",
        "n": 1,
        "path": "a.md",
        "heading": "",
        "line": 1,
        "line_end": 1,
        "page": None,
        "url": None,
    }
    alone = done_data(
        answer="No.", refused=True, relevance=0.9, timings=timings, trace_id=None, quotes=[quote]
    )
    under = done_data(
        answer="Yes [1].", refused=False, relevance=0.9, timings=timings, trace_id=None, quotes=[quote]
    )
    assert alone["quotes_label"] == QUOTES_LABEL and under["quotes_label"] is None
    assert set(get_type_hints(ErrorData)) >= {"stage", "message", "hint", "trace_id"}
