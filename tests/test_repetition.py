"""The loop guard on real looping answers of the 1.5B model, and on text that repeats without looping."""

from __future__ import annotations

import pytest

from citedocs.answer.repetition import RepetitionGuard, loop_start

# the start of two answers that looped to the 512-token cap in eval/baseline (093 and 1be7fb77)
PHRASE_LOOP = (
    "The Prompt Generator tool helps users to create and tailor prompts for various tasks"
    + ", such as generating high-quality prompts for specific tasks" * 12
)
NUMBERED_LOOP = (
    "To get started, follow these steps:\n1. Get your Claude API key.\n2. Install the Claude for Sheets "
    "extension.\n" + "".join(f"{n}. Connect your API key.\n" for n in range(3, 40))
)


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        (PHRASE_LOOP, "for various tasks, such as generating high-quality prompts for specific tasks,"),
        (NUMBERED_LOOP, "Install the Claude for Sheets extension.\n3. Connect your API key."),
        ("設定ファイルを開きます。" + "次に保存します。" * 20, "設定ファイルを開きます。次に保存します。"),
        ("Use the tool, " * 20, "Use the tool,"),
    ],
)
def test_a_looping_answer_is_cut_after_its_first_copy(text: str, kept: str) -> None:
    cut = loop_start(text)
    assert cut is not None
    assert text[:cut].endswith(kept)
    assert text[:cut].count(kept.rsplit("\n", 1)[-1]) == 1


@pytest.mark.parametrize(
    "text",
    [
        "The server listens on port 8765 by default [1]. Set CITEDOCS_PORT to change it [2].",
        "=" * 400,
        "1. Install it [1].\n2. Configure it [1].\n3. Run it [2].\n4. Check the log [2].\n",
        # three copies are a pattern, not yet a loop
        "Retry the request. " * 3,
        # a table whose rows share their shape but not their values
        "".join(f"| claude-{n} | {n * 1000} tokens | ${n}.{n}0 |\n" for n in range(1, 30)),
        "def f(x):\n    return x\n\n" * 2 + "print(f(1))\n",
    ],
)
def test_text_that_does_not_loop_is_not_cut(text: str) -> None:
    assert loop_start(text) is None


def test_the_guard_stops_a_streamed_loop_early() -> None:
    pieces = [PHRASE_LOOP[i : i + 4] for i in range(0, len(PHRASE_LOOP), 4)]
    guard = RepetitionGuard(4)
    stopped = next(i for i, piece in enumerate(pieces) if guard.feed(piece) is not None)
    # four copies of the 62-character clause and one check interval, not the 12 copies streamed
    assert stopped * 4 < 5 * 62 + 32 + 90
