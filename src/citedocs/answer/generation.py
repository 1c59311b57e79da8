"""One model reply to an answer's prompt: streamed as it is written, cut where it loops, held back while it can
still be the refusal sentence, and asked once more when the model refused a question the gate let through.

Why ask again: the 1.5B model refuses answerable questions at random. Over the committed claude-docs runs the
same question was refused in 3 of 9 runs, 5 of 11, 5 of 11 and answered in the others, and those refusals are
what most lowers what a reader gets (a refused answer has no quotes unless a passage matches closely). Asked
again at temperature 0.7 (bench/studies/refusal_retry.py, the 11 refused prompts of the committed runs, 3 asks
each), the model answered 12 of 18 asks of answerable questions and 2 of 15 of unanswerable ones (whose
answers the citation check then judges like any other); asked again at 0.1 it answered 4 of 18 and 1 of 15, and
told to look again before refusing, none. Asking again costs only the second reply's tokens (llama.cpp keeps
the prompt in its cache), and nothing when the model answers at once: the refusal sentence is held back until
the first words rule it out, so an answer's first token is not delayed and a reader never sees a refusal that
is then taken back.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import cast

from citedocs.answer.citations import could_be_refusal, is_refusal
from citedocs.answer.repetition import RepetitionGuard
from citedocs.answer.stats import ms
from citedocs.llm.chat import ChatModel, Finish, LLMEvent, TokenDelta

__all__ = ["ASKS", "RETRY_TEMPERATURE", "TEMPERATURE", "RefusalHold", "Reply", "model_reply"]

TEMPERATURE = 0.1  # low: answers quote their sources
# The second ask after a refusal: warmer, so the model does not write the same refusal again.
RETRY_TEMPERATURE = 0.7
ASKS = 2  # the first ask and, after a refusal, one more


class RefusalHold:
    """The streamed text, held back while it is nothing but the start of the refusal sentence."""

    def __init__(self) -> None:
        self._held: list[str] = []
        self.holding = True

    def feed(self, piece: str) -> str:
        """What the reader may see now: "" while held, then everything held so far, then each piece."""
        if not self.holding:
            return piece
        self._held.append(piece)
        text = "".join(self._held)
        if could_be_refusal(text):
            return ""
        self.holding, self._held = False, []
        return text

    def release(self) -> str:
        """The held text, once the reply is final."""
        text, self._held, self.holding = "".join(self._held), [], False
        return text


@dataclass(slots=True)
class Reply:
    """What `model_reply` leaves once its stream ends: the text, how it finished, and when."""

    pieces: list[str] = field(default_factory=list)
    text: str = ""
    finish: Finish | None = None
    # where the repetition guard cut the text (the stream was closed there); None when it did not
    looped_at: int | None = None
    ttft_ms: float | None = None
    generation_ms: float = 0.0
    asks: int = 0

    @property
    def partial(self) -> str:
        return "".join(self.pieces)


async def model_reply(
    llm: ChatModel,
    messages: Sequence[Mapping[str, str]],
    reply: Reply,
    *,
    max_tokens: int,
    started: float,
    seed: int | None = None,
    refusal: str | None = None,
) -> AsyncGenerator[str, None]:
    """The text a reader sees, piece by piece; `reply` holds the rest when the generator ends. `started`: when
    the answer began (time to first token is counted from it). A refusal is asked once more. `seed` (a
    reproducible evaluation): the model samples with it, each ask its own. `refusal`: what the reader is shown
    in place of a reply that is the refusal sentence (the model writes it in English whatever the question's
    language; `reply.text` keeps what it wrote)."""
    for ask in range(ASKS):
        reply.asks, reply.pieces, reply.finish, hold = ask + 1, [], None, RefusalHold()
        guard = RepetitionGuard()
        began = time.perf_counter()
        stream = cast(
            "AsyncGenerator[LLMEvent, None]",
            llm.stream_chat(
                messages,
                max_tokens=max_tokens,
                temperature=TEMPERATURE if ask == 0 else RETRY_TEMPERATURE,
                extra=None if seed is None else {"seed": seed + ask},
            ),
        )
        async with contextlib.aclosing(stream) as events:
            async for event in events:
                if isinstance(event, TokenDelta):
                    reply.pieces.append(event.text)
                    shown = hold.feed(event.text)
                    if shown:
                        reply.ttft_ms = reply.ttft_ms or ms(time.perf_counter() - started)
                        yield shown
                    cut = guard.feed(event.text)
                    if cut is not None:  # closing the stream stops the server's generation too
                        reply.looped_at, reply.text = cut, guard.text[:cut]
                        break
                elif isinstance(event, Finish):
                    reply.finish, reply.text = event, "".join(reply.pieces)
        reply.generation_ms += ms(time.perf_counter() - began)
        if reply.finish is None or not hold.holding or not is_refusal(reply.text):
            break
    shown = hold.release()
    if shown and refusal is not None and is_refusal(reply.text):
        shown = refusal
    if shown:
        reply.ttft_ms = reply.ttft_ms or ms(time.perf_counter() - started)
        yield shown
