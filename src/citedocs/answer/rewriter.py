"""The query a follow-up question searches: the model's standalone rewrite when a model is loaded and quick,
else the question with the conversation's salient words (answer/conversation.py), which needs no model."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence

from citedocs.answer.conversation import (
    REWRITE_MAX_TOKENS,
    REWRITE_STOP,
    FollowUpQuery,
    Turn,
    carried_words,
    parse_rewrite,
    rewrite_messages,
)
from citedocs.answer.prompt import new_fence
from citedocs.answer.stats import ms
from citedocs.llm.chat import ChatModel

__all__ = ["REWRITE_REST_S", "REWRITE_TIMEOUT_S", "FollowUpRewriter"]

log = logging.getLogger(__name__)

# The model's rewrite of a follow-up must come back within this, else the deterministic one is searched: a slow
# or busy model costs a follow-up at most this much. A model that missed it is not asked again for a while: the
# 1.5B model on 2 CPU cores took 6-10 s per rewrite (bench/bench_followups.py), so every follow-up would wait
# the whole budget for nothing.
REWRITE_TIMEOUT_S = 1.5
REWRITE_REST_S = 600.0


class FollowUpRewriter:
    """Writes follow-ups' queries for one answer service; remembers when its model was too slow to ask."""

    def __init__(self) -> None:
        self._rests_until = 0.0  # time.monotonic() before which the model is not asked to rewrite

    async def query(self, llm: ChatModel | None, question: str, history: Sequence[Turn]) -> FollowUpQuery:
        """The query a follow-up searches: the model's standalone rewrite when a model is loaded, else (and
        when the model fails) the question with the earlier questions' salient words."""
        if not history:
            return FollowUpQuery(question)
        started = time.perf_counter()
        fallback = None
        if llm is not None and time.monotonic() < self._rests_until:
            fallback = f"the model took over {REWRITE_TIMEOUT_S:g} s to rewrite a recent follow-up"
        elif llm is not None:
            try:
                done = await asyncio.wait_for(
                    llm.complete(
                        rewrite_messages(history, question, new_fence()),
                        max_tokens=REWRITE_MAX_TOKENS,
                        temperature=0.0,
                        stop=REWRITE_STOP,
                    ),
                    REWRITE_TIMEOUT_S,
                )
                rewrite = parse_rewrite(done.text, question)
                if rewrite is not None:
                    return FollowUpQuery(question, rewrite, "model", ms(time.perf_counter() - started))
                fallback = "the model's rewrite was not a question"
            except TimeoutError:
                self._rests_until = time.monotonic() + REWRITE_REST_S
                fallback = f"the model took over {REWRITE_TIMEOUT_S:g} s to rewrite it"
            except Exception as exc:  # the rewrite is an optimisation: any failure falls back, never fails
                fallback = f"the model's rewrite failed ({type(exc).__name__})"
                log.info("follow-up rewrite by the model failed: %s", exc)
        carried = carried_words(history, question)
        rewrite = f"{question} {' '.join(carried)}" if carried else None
        return FollowUpQuery(
            question,
            rewrite,
            "terms" if rewrite else None,
            ms(time.perf_counter() - started),
            fallback,
            " ".join(carried) or None,
        )
