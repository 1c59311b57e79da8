"""The faithfulness judge: one yes/no per (sentence, cited passage), through any OpenAI-compatible endpoint.

The question and what needs no model are answer/support.py's (the answer's own check asks the same); how the
1.5B model agrees with hand grades is written there. A stronger judge is one `--judge-base-url` away. Since
the answer drops the sentences the answer model says no to (answer/model_check.py), the same model judging
the same answers mostly says yes: hand grades are the measure then.
"""

from __future__ import annotations

from dataclasses import dataclass

from citedocs.answer.support import (
    JUDGE_SYSTEM,
    WINDOW_CHARS,
    copied_from,
    judge_messages,
    parse_verdict,
    relevant_window,
)
from citedocs.llm.chat import ChatModel

__all__ = [
    "JUDGE_SYSTEM",
    "WINDOW_CHARS",
    "Judge",
    "copied_from",
    "judge_messages",
    "parse_verdict",
    "relevant_window",
]


@dataclass(slots=True)
class Judge:
    client: ChatModel

    async def supports(self, sentence: str, passage: str) -> bool | None:
        if copied_from(sentence, passage):
            return True
        result = await self.client.complete(judge_messages(sentence, passage), max_tokens=3, temperature=0.0)
        return parse_verdict(result.text)
