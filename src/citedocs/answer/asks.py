"""Short yes/no questions to the answer model, within a count and a time budget, for the optional steps after
an answer (answer/confirm.py after a refusal, answer/model_check.py after an answer).

Each ask is temperature 0 and 3 tokens, with the evaluation's seed when there is one. A failed or slow ask ends
the asking: the step keeps what it had, and the answer is never held up past the budget.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from citedocs.answer.stats import ms
from citedocs.llm.chat import ChatModel

__all__ = ["Asker"]

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Asker:
    """Asks `llm` at most `max_asks` questions within `budget_s` seconds of its creation; `asked` counts the
    ones answered."""

    llm: ChatModel
    max_asks: int
    budget_s: float
    seed: int | None = None
    asked: int = 0
    stopped: bool = False
    started: float = field(default_factory=time.perf_counter)

    async def ask(self, messages: Sequence[Mapping[str, str]], what: str) -> str | None:
        """The model's reply, or None when no ask is left (the count, the time, or a failure before): then
        none will be. `what` names the step in the log line of a failure."""
        left = self.budget_s - (time.perf_counter() - self.started)
        if self.stopped or self.asked >= self.max_asks or left <= 0:
            self.stopped = True
            return None
        reply = self.llm.complete(
            messages,
            max_tokens=3,
            temperature=0.0,
            extra=None if self.seed is None else {"seed": self.seed},
        )
        try:
            done = await asyncio.wait_for(reply, left)
        except Exception as exc:  # an optional step: any failure or delay ends the asking
            log.info("asking the model to %s failed: %r", what, exc)
            self.stopped = True
            return None
        self.asked += 1
        return done.text

    @property
    def ms(self) -> float:
        return ms(time.perf_counter() - self.started)
