"""Follow-up questions: the earlier turns of a conversation, bounded, and what retrieval and the prompt take
from them. Pure functions over plain data; the answer service (`answer/service.py`) calls them.

A follow-up ("And how long should I wait before retrying it?") names little of what it is about, so searching
it alone finds little and the relevance gate refuses it. Retrieval searches a standalone query written from the
history together with the literal question (`fuse_rankings`): `carry_terms`, which adds the salient words of
the earlier turns (through the one text analyzer, so Japanese works too) to the question and needs no model,
and in front of them, when a model is loaded and quick, the words the model says the follow-up refers to
(answer/rewriter.py). The prompt carries the earlier questions and a one-sentence summary of each answer
(`compact_history`), never whole answers, within `HISTORY_PROMPT_CHARS`.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from citedocs.answer.citations import is_refusal
from citedocs.answer.gate import GateDecision, question_terms, relevance_decision
from citedocs.errors import InputError
from citedocs.hits import Hit
from citedocs.search.fusion import rrf
from citedocs.text.analyzer import salient_words, word_set

__all__ = [
    "CARRY_TERMS",
    "CITATION_RE",
    "CONVERSATION_WORDS",
    "FOLLOW_UP_TERMS",
    "FUSION_K",
    "HISTORY_PROMPT_CHARS",
    "MAX_HISTORY_CHARS",
    "MAX_TURNS",
    "STANDALONE_ANSWER_TERMS",
    "STANDALONE_TERMS",
    "FollowUpQuery",
    "Turn",
    "carried_words",
    "carry_terms",
    "compact_history",
    "follow_up_gate",
    "follow_up_words",
    "fuse_rankings",
    "is_asking_back",
    "keep_within_bounds",
    "parse_history",
    "standalone_words",
    "summary",
]

# Bounds of one request's history: more is refused with a message, never cut silently.
MAX_TURNS = 20
MAX_HISTORY_CHARS = 8000
# What the prompt carries of the history (questions and one-sentence answer summaries), newest turns first.
HISTORY_PROMPT_CHARS = 1200
SUMMARY_CHARS = 200
# Words the deterministic rewrite adds from earlier questions (newest first) and from the last answer, whose
# words carry what a follow-up is about ("it" is what the answer was about). Chosen with bench/bench_followups.py
# (keyword retrieval; docs/conversations.md): on the 141 MTRAG follow-ups, 8 and 0 words put a reference first
# for 0.738 and the gate refused 0.149; 8 and 16: 0.816 and 0.035 (12 or 16 from questions: within 0.02).
CARRY_TERMS = 8
CARRY_ANSWER_TERMS = 16
# The standalone rewrite (the question made to stand alone) adds only the nearest context: the first salient
# words of the last questions and of the last answer, where a follow-up's subject was just named. All the
# carried words are the third query, and the relevance gate reads them all. With the whole context in the
# rewrite too, two of the three fused rankings searched the earlier topic, and a follow-up that names a new
# subject ("What is a safe room?") lost its own first passage to it. On the 141 MTRAG follow-ups a reference
# ranked first for 120 instead of 115 (keyword) and 128 instead of 123 (hybrid); Japanese unchanged (21 of 25
# in both); 3 and 3 words: 117 / 126, 5 and 5: 119 / 128, 6 and 6: 117 / 129 (bench/bench_followups.py).
STANDALONE_TERMS = 4
STANDALONE_ANSWER_TERMS = 4
# A follow-up with more content terms than this passes the gate on its context only if the passage that holds
# most of its rewrite holds one of its own words: a longer question that shares no word with what its
# conversation finds starts a new topic. Of the off-topic-40 questions asked as follow-ups of MTRAG
# conversations the gate lets 16 through (8 asked alone; 31 without the rule), of the 141 answerable MTRAG
# follow-ups it refuses 2 more (bench/bench_followups.py, with FUSION_K 1).
FOLLOW_UP_TERMS = 3
# Words people say about the conversation rather than its subject ("Thank you, that helps. Can you tell me
# more?"): salient to the analyzer, but carried they pull in any passage that says "information" or "help".
# Not carried (a question that asks about them still searches them). On MTRAG a reference ranked first for
# 118 of 141 follow-ups instead of 115, Japanese unchanged (it has none of them).
CONVERSATION_WORDS = word_set(
    """
    thank thanks please glad sorry welcome ok okay sure hi hello hey great fine nice cool wow yeah yep
    appreciate know tell want wanted like information info interesting helpful anyway maybe think really
    """
)
# Reciprocal-rank fusion's constant for a follow-up's rankings (score 1 / (k + rank)). The usual 60 is for
# fusing deep lists of different systems; here three short lists (twice k hits) of one retriever are fused,
# and a passage that two of them rank first should beat one that sits at ranks 2-3 of all three (the literal
# question's terms are generic: "ファイルを送る順番に決まりはある？"). With 1 instead of 60 a reference ranked
# first for 21 of the 25 Japanese follow-ups instead of 18 and reached the prompt for 133 of the 141 MTRAG
# ones instead of 128 (bench/bench_followups.py, with CONVERSATION_WORDS; docs/conversations.md).
FUSION_K = 1

Role = Literal["user", "assistant"]
_ROLES = ("user", "assistant")


@dataclass(frozen=True, slots=True)
class Turn:
    """One earlier turn: what the user asked, or what the assistant answered."""

    role: Role
    content: str

    def to_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True, slots=True)
class FollowUpQuery:
    """What retrieval searched for a question: the literal question and, for a follow-up, its standalone
    rewrite (the question, the words the model says it refers to, the `standalone_words`) and who wrote it
    ("model" when the model's words are in it, else "terms"), and all the carried words; `ms` is what writing
    it cost, `fallback` why the model's words are not in it."""

    question: str
    rewrite: str | None = None
    by: str | None = None
    ms: float = 0.0
    fallback: str | None = None
    carried: str | None = None

    @property
    def searched(self) -> list[str]:
        """The queries whose rankings are fused: each once, the literal question first."""
        return list(dict.fromkeys(q for q in (self.question, self.rewrite, self.carried) if q))

    @property
    def context(self) -> str:
        """The question with all its context (the rewrite and the carried words it lacks), for the relevance
        gate and the evidence sentences: whether the documents cover a follow-up depends on the whole
        conversation, not only on its nearest words."""
        if not self.rewrite or not self.carried:
            return self.rewrite or self.question
        have = {w.lower() for w in self.rewrite.split()}
        more = [w for w in self.carried.split() if w.lower() not in have]
        return " ".join([self.rewrite, *more])

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "rewrite": self.rewrite,
            "by": self.by,
            "searched": self.searched,
            "ms": self.ms,
            "fallback": self.fallback,
        }


_HINT = (
    f'Send history as a list of at most {MAX_TURNS} turns like {{"role": "user", "content": "..."}} (role user '
    f"or assistant), {MAX_HISTORY_CHARS:,} characters in all; start a new conversation when it grows longer."
)


def parse_history(raw: Iterable[Turn | Mapping[str, Any]] | None) -> tuple[Turn, ...]:
    """Validated earlier turns, oldest first. Raises InputError (HTTP 422) for a bad turn or a history over
    `MAX_TURNS` turns or `MAX_HISTORY_CHARS` characters: nothing is cut silently."""
    if raw is None:
        return ()
    turns: list[Turn] = []
    for n, item in enumerate(raw, start=1):
        if isinstance(item, Turn):
            role: Any = item.role
            content: Any = item.content
        elif isinstance(item, Mapping):
            role, content = item.get("role"), item.get("content")
        else:
            raise InputError(f"History turn {n} is not an object.", _HINT)
        if role not in _ROLES or not isinstance(content, str):
            raise InputError(f"History turn {n} needs a role (user or assistant) and a text content.", _HINT)
        if content.strip():
            turns.append(Turn(role, content))
    if len(turns) > MAX_TURNS:
        raise InputError(f"The history has {len(turns)} turns; at most {MAX_TURNS} are allowed.", _HINT)
    chars = sum(len(t.content) for t in turns)
    if chars > MAX_HISTORY_CHARS:
        raise InputError(
            f"The history has {chars:,} characters; at most {MAX_HISTORY_CHARS:,} are allowed.", _HINT
        )
    return tuple(turns)


def keep_within_bounds(history: list[Turn]) -> int:
    """Drop the oldest question-and-answer pairs until `history` fits the bounds; returns how many turns went
    (an interactive session says so: nothing is dropped silently)."""
    dropped = 0
    while history and (len(history) > MAX_TURNS or sum(len(t.content) for t in history) > MAX_HISTORY_CHARS):
        del history[: min(2, len(history))]
        dropped += 2
    return dropped


def _keys(words: Iterable[str]) -> set[str]:
    return {w.lower() for w in words}


def carry_terms(
    history: Sequence[Turn],
    question: str,
    *,
    limit: int = CARRY_TERMS,
    answer_limit: int = CARRY_ANSWER_TERMS,
) -> str | None:
    """The deterministic rewrite: `question` followed by its `carried_words`; None when there are none."""
    added = carried_words(history, question, limit=limit, answer_limit=answer_limit)
    return f"{question.strip()} {' '.join(added)}" if added else None


def carried_words(
    history: Sequence[Turn],
    question: str,
    *,
    limit: int = CARRY_TERMS,
    answer_limit: int = CARRY_ANSWER_TERMS,
) -> list[str]:
    """The salient words of the earlier questions (newest first) that `question` does not already hold, at
    most `limit`, then at most `answer_limit` of the last answer (not a refusal), as written."""
    return _Analysed(history, question).carry(limit, answer_limit)


def standalone_words(history: Sequence[Turn], question: str) -> list[str]:
    """The words the standalone rewrite adds to `question`: the nearest of its `carried_words` (at most
    `STANDALONE_TERMS` of the earlier questions, newest first, and `STANDALONE_ANSWER_TERMS` of the last
    answer)."""
    return _Analysed(history, question).carry(STANDALONE_TERMS, STANDALONE_ANSWER_TERMS)


def follow_up_words(history: Sequence[Turn], question: str) -> tuple[list[str], list[str]]:
    """`carried_words` and `standalone_words` at once, the turns analysed once (not twice)."""
    analysed = _Analysed(history, question)
    return analysed.carry(CARRY_TERMS, CARRY_ANSWER_TERMS), analysed.carry(
        STANDALONE_TERMS, STANDALONE_ANSWER_TERMS
    )


class _Analysed:
    """The salient words of a follow-up, of the earlier questions (newest first) and of the last answer that
    is not a refusal, each text through the analyzer once."""

    def __init__(self, history: Sequence[Turn], question: str) -> None:
        self.question = _keys(salient_words(question)) if history else set()
        users = [t.content for t in history if t.role == "user"]
        self.asked = [salient_words(text) for text in reversed(users)]
        answers = [t.content for t in history if t.role == "assistant" and not is_refusal(t.content)]
        self.answered = salient_words(CITATION_RE.sub(" ", answers[-1])) if answers else []

    def carry(self, limit: int, answer_limit: int) -> list[str]:
        """At most `limit` words of the questions, then `answer_limit` of the answer, that the follow-up
        does not hold (nor `CONVERSATION_WORDS`), as written."""
        have = set(self.question)
        added: list[str] = []

        def take(words: list[str], most: int) -> None:
            taken = 0
            for word in words:
                if len(added) >= limit + answer_limit or taken >= most:
                    return
                if word.lower() not in have and word.lower() not in CONVERSATION_WORDS:
                    have.add(word.lower())
                    added.append(word)
                    taken += 1

        for words in self.asked:
            take(words, limit - len(added))
        if answer_limit:
            take(self.answered, answer_limit)
        return added


def fuse_rankings(rankings: Sequence[Sequence[Hit]], weights: Sequence[float] | None = None) -> list[Hit]:
    """Hits of several searches as one list by reciprocal-rank fusion (a hit once, its first copy).

    A follow-up's rankings are the literal question's, its standalone rewrite's (the question and its nearest
    context) and all the carried words' alone, weighted alike, with `FUSION_K`: no context, a little, all of
    it; a passage that both the question and its context find ranks first. Two lists (the
    question and its rewrite, which holds the question's words too) favour what the question alone matches:
    on the 25 Japanese follow-ups a reference ranked first for 0.40 instead of 0.64, in the prompt for 0.80
    instead of 0.92; on MTRAG 0.830 and 0.915 against 0.816 and 0.915 (docs/conversations.md)."""
    by_key: dict[Hashable, Hit] = {}
    keyed: list[list[Hashable]] = []
    for hits in rankings:
        keys: list[Hashable] = []
        for hit in hits:
            key = hit.chunk_id or f"{hit.path}#{hit.line_start}"
            by_key.setdefault(key, hit)
            keys.append(key)
        keyed.append(keys)
    return [by_key[key] for key, _ in rrf(keyed, k=FUSION_K, weights=weights)]


def follow_up_gate(
    question: str,
    rewrite: str | None,
    hits: Sequence[Hit],
    threshold: float,
    *,
    own_terms: int = FOLLOW_UP_TERMS,
) -> GateDecision:
    """The relevance gate (answer/gate.py) for a question, and for a follow-up with its context: it passes when
    the question passes alone, or when its `rewrite` passes and the question is short (at most `own_terms`
    content terms: "And how long should I wait?") or the passage that holds most of the rewrite holds one of
    its own terms too. Any passage would not do: the literal question's own best hits are among the passages
    (they rank first in their list), so an off-topic question asked after a conversation would always pass."""
    gate = relevance_decision(question, hits, threshold)
    if gate.allowed or not rewrite:
        return gate
    with_context = relevance_decision(rewrite, hits, threshold)
    if not with_context.allowed:
        return gate
    terms = len(question_terms(question).all)
    n = with_context.best_n or 1
    held_by = hits[n - 1 : n]
    if terms > own_terms and not relevance_decision(question, held_by, 1.0, min_held=1).allowed:
        return GateDecision(
            False,
            f"None of this question's {terms} terms is in the passage its conversation finds best, so it seems to "
            f"start a new topic the documents do not cover. Ask it on its own with the documents' terms, or add "
            f"documents that cover it.",
            gate.best,
            gate.best_n,
        )
    return GateDecision(
        True, f"With the conversation: {with_context.reason}", with_context.best, with_context.best_n
    )


# -- the prompt's history ---------------------------------------------------------------------------------
CITATION_RE = re.compile(r"\s*\[(?:\d+(?:\s*[,-]\s*\d+)*|unverified)\]")
_SENTENCE_END_RE = re.compile(r"(?<=[.!?。！？])\s+|(?<=[。！？])")


def summary(answer: str, limit: int = SUMMARY_CHARS) -> str:
    """An answer's first sentence without its citation marks (they numbered another turn's sources)."""
    text = " ".join(CITATION_RE.sub("", answer).split())
    first = _SENTENCE_END_RE.split(text, maxsplit=1)[0] if text else ""
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"


def compact_history(history: Sequence[Turn], limit: int = HISTORY_PROMPT_CHARS) -> list[str]:
    """`Q: …` and `A: …` lines (each answer as its `summary`), oldest first, newest kept when over `limit`."""
    lines: list[str] = []
    used = 0
    for turn in reversed(history):
        text = summary(turn.content) if turn.role == "assistant" else " ".join(turn.content.split())
        if turn.role == "user" and len(text) > SUMMARY_CHARS:
            text = text[: SUMMARY_CHARS - 1].rstrip() + "…"
        line = f"{'Q' if turn.role == 'user' else 'A'}: {text}"
        if used + len(line) > limit:
            break
        lines.append(line)
        used += len(line) + 1
    return lines[::-1]


_QUESTION_END_RE = re.compile(r"[?？]\s*$")


def is_asking_back(raw: str) -> bool:
    """Whether the model answered an underspecified follow-up with one short question of its own and no
    citation: shown as it is (not a refusal, nothing to check)."""
    text = raw.strip()
    return (
        bool(text)
        and len(text) <= 300
        and _QUESTION_END_RE.search(text) is not None
        and re.search(r"\[\d+\]", text) is None
        and len(_SENTENCE_END_RE.split(text)) <= 2
    )
