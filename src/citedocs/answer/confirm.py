"""After the model refused: asked about one source sentence at a time, does it answer the question?

A refused answer shows only quotes that match the question closely (`MIN_QUOTE_SCORE_REFUSED`): a lower bar
also quotes the near-misses of unanswerable questions. But the 1.5B model refuses answerable questions with
the answer in its prompt (7 of 30 Japanese ones in `answer-ja-8`), and there the sentence that answers often
shares few words with the question ("メンテナスクリプトは冪等でなければなりません。" for "run twice?"). The
same model, shown one sentence and the question and asked yes or no, tells them apart far better than it
writes an answer from five passages: on the refused cases of every committed run (bench/studies/
quote_confirm.py), quotes it confirmed (shown first) raised the key facts a reader sees from 3.5 to 7.0 of 17
Japanese answerable cases and 1.0 to 3.5 of 6 English ones, and it confirmed nothing for the 9 unanswerable
ones; with the relevance gate set aside, for 1 of 29 unanswerable or off-topic questions, and for none of
MTRAG's 49 unanswerable last turns. Each ask is a short prompt and a one-word reply (0.3-0.7 s on 2 cores),
made only after a refusal, at most `MAX_ASKS` within `BUDGET_S`.
A sentence is a document's text: the most it can do is talk the model into "yes", and then it is shown
verbatim, cited and labelled as a quote. (Fencing it as data changed the 1.5B model's answers for the worse:
it confirmed a quote for an unanswerable question; docs/decisions/answers.md, tenth round.)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from citedocs.answer.asks import Asker
from citedocs.answer.prepared import PreparedAnswer
from citedocs.answer.quotes import Quote
from citedocs.llm.chat import ChatModel

__all__ = [
    "BUDGET_S",
    "CONFIRM_SYSTEM",
    "MAX_ASKS",
    "Confirmation",
    "confirm_messages",
    "confirm_quotes",
    "confirmed_after_refusal",
    "says_yes",
]


CONFIRM_SYSTEM = (
    "You check whether a sentence taken from a document answers a question. Answer yes only if the "
    "sentence itself states the answer, or part of it, to exactly what is asked. If the sentence is about "
    "something else, or only repeats words of the question, answer no. Reply with one word: yes or no."
)
MAX_ASKS = 8  # the best of quotes.to_confirm's pool
BUDGET_S = 12.0  # all the asks of one answer; what is unasked (or unanswered) by then is not shown
_YES = re.compile(r"\W*(?:yes|はい)\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Confirmation:
    """The texts the model confirmed, how many sentences it was asked about, and how long that took."""

    confirmed: frozenset[str]
    asked: int
    ms: float


def confirm_messages(question: str, sentence: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": CONFIRM_SYSTEM},
        {
            "role": "user",
            "content": f"Question: {question}\nSentence: {sentence}\nDoes this sentence answer the question? yes or no",
        },
    ]


def says_yes(reply: str) -> bool:
    """Only a reply that starts with yes (or はい) confirms; anything else, an empty or odd reply included,
    does not."""
    return _YES.match(reply) is not None


async def confirm_quotes(
    llm: ChatModel,
    question: str,
    quotes: Sequence[Quote],
    *,
    seed: int | None = None,
    budget_s: float = BUDGET_S,
) -> Confirmation:
    """Ask about each of `quotes` in turn (at most MAX_ASKS, none started after `budget_s`); a failed ask
    ends the asking, and what was confirmed before it stands: this only adds quotes to a refusal."""
    asks = Asker(llm, MAX_ASKS, budget_s, seed)
    confirmed: set[str] = set()
    for quote in quotes:
        reply = await asks.ask(confirm_messages(question, quote.text), "confirm a quote")
        if reply is None:
            break
        if says_yes(reply):
            confirmed.add(quote.text)
    return Confirmation(frozenset(confirmed), asks.asked, asks.ms)


async def confirmed_after_refusal(
    llm: ChatModel | None, prepared: PreparedAnswer, refused: bool
) -> frozenset[str]:
    """The answer service's step after the model `refused` (nothing otherwise, or without a model): the quotes
    of `prepared` the model says answer its question (`PreparedAnswer.to_confirm`), traced."""
    query, pending = prepared.to_confirm() if refused and llm else ("", [])
    if not pending or llm is None:
        return frozenset()
    checked = await confirm_quotes(llm, query, pending, seed=prepared.seed)
    prepared.trace.event(
        "quotes_confirmed", {"asked": checked.asked, "confirmed": len(checked.confirmed), "ms": checked.ms}
    )
    return checked.confirmed
