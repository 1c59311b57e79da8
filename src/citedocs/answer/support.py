"""Does a passage support a sentence? The yes/no question put to a model, and what needs no model.

One copy of the rule for two callers: the evaluation's faithfulness judge (eval/judge.py) and the answer's
own check of its sentences (answer/model_check.py). Measured with Qwen2.5-Coder-1.5B against hand grades
(eval/baseline/REPORT.md): whole passages 75% agreement on 28 pairs; the evidence window below 79%; two
few-shot examples made it accept 96% (kappa -0.07), so they are not used. Sentences copied from their passage
are supported without a model call (`copied_from`): on 61 development pairs 0.721 -> 0.754 agreement. On 120
held-out pairs: 0.767 (kappa 0.44), strict (64% judged supported where the grader found 79%).
"""

from __future__ import annotations

import difflib
import re

from citedocs.answer.sentences import strip_markers
from citedocs.text.analyzer import terms

__all__ = [
    "JUDGE_SYSTEM",
    "WINDOW_CHARS",
    "copied_from",
    "judge_messages",
    "parse_verdict",
    "relevant_window",
]

JUDGE_SYSTEM = (
    "You check whether a passage supports a sentence. Answer with one word: yes or no. "
    "Say yes only if everything the sentence states (facts, numbers, names) is stated or directly implied by "
    "the passage."
)
_YES = re.compile(r"\byes\b", re.IGNORECASE)
_NO = re.compile(r"\bno\b", re.IGNORECASE)


WINDOW_CHARS = 900
_PIECE = re.compile(r"[^.!?\n]+[.!?]?")


def relevant_window(passage: str, sentence: str, width: int = WINDOW_CHARS) -> str:
    """The stretch of the passage (at most `width` characters) that shares the most terms with the sentence.

    Measured on 28 hand-graded pairs: given whole, repetitive ~2,000-character chunks, the 1.5B judge said "no"
    to five sentences copied verbatim from them; a short window keeps the evidence in view.
    """
    if len(passage) <= width:
        return passage
    wanted = set(terms(sentence))
    pieces = [(m.start(), m.end(), len(wanted & set(terms(m.group())))) for m in _PIECE.finditer(passage)]
    best_start, best_score = 0, -1
    for i, (start, _, _) in enumerate(pieces):
        score = sum(hits for s, e, hits in pieces[i:] if e <= start + width)
        if score > best_score:
            best_start, best_score = start, score
    return passage[best_start : best_start + width]


# A sentence is the passage's own words when runs of at least COPY_RUN tokens, in the passage's order, cover
# COPY_SHARE of its tokens and the tokens left over hold no number and no negation ("not" flips a copied claim).
COPY_RUN = 4
COPY_SHARE = 0.9
_TOKEN = re.compile(r"\w+")
_NEGATIONS = frozenset({"not", "no", "never", "nor", "without", "cannot", "t", "none", "neither"})


def copied_from(sentence: str, passage: str) -> bool:
    """True when the sentence restates the passage in the passage's own words, which needs no model to judge.

    Measured on the hand-graded pairs: the 1.5B judge said "no" to sentences copied from their passage
    (e.g. "Temporary credentials can be used with aws_session_token." beside that very line).
    """
    said = [t.lower() for t in _TOKEN.findall(strip_markers(sentence))]
    if len(said) < COPY_RUN:
        return False
    source = [t.lower() for t in _TOKEN.findall(passage)]
    covered = [False] * len(said)
    matcher = difflib.SequenceMatcher(None, said, source, autojunk=False)
    for block in matcher.get_matching_blocks():
        if block.size >= COPY_RUN:
            covered[block.a : block.a + block.size] = [True] * block.size
    left = [t for t, done in zip(said, covered, strict=True) if not done]
    if len(left) > (1 - COPY_SHARE) * len(said):
        return False
    return not any(t in _NEGATIONS or any(c.isdigit() for c in t) for t in left)


def judge_messages(sentence: str, passage: str) -> list[dict[str, str]]:
    window = relevant_window(passage, sentence)
    return [
        {"role": "system", "content": JUDGE_SYSTEM},
        {
            "role": "user",
            "content": f"Passage:\n<<<\n{window}\n>>>\n\nSentence:\n<<<\n{sentence}\n>>>\n\n"
            "Does the passage support the sentence? Answer yes or no.",
        },
    ]


def parse_verdict(text: str) -> bool | None:
    """yes → True, no → False, anything else → None (counted apart, never guessed)."""
    head = text.strip()[:20]
    yes, no = _YES.search(head), _NO.search(head)
    if yes and not no:
        return True
    if no and not yes:
        return False
    return None
