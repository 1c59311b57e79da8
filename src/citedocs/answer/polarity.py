"""Does a passage state the opposite of a sentence? Content words alone cannot tell: "Zebras do not need 20
liters of water per day" shares every content term with "Zebras need 20 liters of water per day".

Pure and lexical, in English and Japanese. The passage sentence that shares most words with the answer
sentence is compared with it on two things:

- polarity: the parity of negations (not, no, never, none, n't, without, cannot; ない, ません, 不要, 不可, ...),
  where the negative side of a yes/no pair counts as one (disabled = not enabled, optional = not required,
  無効 = not 有効, 禁止 = not allowed), so "is not enabled" agrees with "is disabled";
- direction on a scale, where each side excludes the other: before/after, more/less (at least, minimum,
  above... against at most, maximum, below...), all/some (all, every, always against some, sometimes,
  usually...); 以前/以降, 以上/以下, すべて/一部.

A sentence that differs from its best passage sentence in either is not supported by that passage, however
many terms they share. Numbers are compared by the citation check itself (every number must appear).
"""

from __future__ import annotations

import re

__all__ = ["polarity", "states_the_opposite"]

_EN_NEGATIONS = (
    r"not|no|never|none|nothing|nobody|neither|nor|cannot|without|n't"
    r"|disabl\w*|deny|denie[sd]|denying|forbid\w*|prohibit\w*|disallow\w*|exclud\w*|false|optional"
    r"|unnecessary|unsupported|unable|fails?|failed|lacks?|lacking"
)
_EN_NEGATION = re.compile(rf"(?<![\w'-])(?:{_EN_NEGATIONS})(?![\w'-])|n't(?!\w)", re.IGNORECASE)
# Japanese: negative endings and the negative side of yes/no pairs. なければ/なくては are counted too, so the
# double negative of obligation (しなければならない, "must") comes out positive.
_JA_NEGATION = re.compile(
    "ない|ません|なく|なければ|無い|無く|無し|なし|不要|不可|不必要|無効|禁止|任意|できず|せず"
)
_JA_NOT_NEGATION = re.compile("少な[いく]|危な[いく]|幼[いく]|切な[いく]|はかな[いく]")
_SCALES: tuple[tuple[re.Pattern[str], re.Pattern[str]], ...] = tuple(
    (re.compile(up, re.IGNORECASE), re.compile(down, re.IGNORECASE))
    for up, down in (
        (r"\bbefore\b|\bprior to\b|\bearlier than\b|以前|より前|前に", r"\bafter\b|\blater than\b|以降|以後|より後|後に"),
        (r"\b(?:more|greater|higher|larger|longer|bigger|above|over|exceeds?|at least|minimum|min|increas\w*)\b"
         r"|以上|超え|より多|多い|増加|増や|最小|最低",
         r"\b(?:less|fewer|lower|smaller|shorter|below|under|at most|maximum|max|decreas\w*|reduc\w*)\b"
         r"|以下|未満|より少|少ない|減少|減ら|最大|最高"),
        (r"\b(?:all|every|each|always)\b|すべて|全て|全部|常に|必ず",
         r"\b(?:some|sometimes|several|usually|often|occasionally|rarely|most)\b|一部|いくつか|場合がある|ことがある"),
    )
)  # fmt: skip
_WORD = re.compile(r"[a-z0-9]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|[。！？\n]+")


def polarity(sentence: str) -> tuple[int, tuple[int, ...]]:
    """(parity of negations, direction on each scale: 1 up, -1 down, 0 neither or both)."""
    negations = len(_EN_NEGATION.findall(sentence))
    negations += len(_JA_NEGATION.findall(_JA_NOT_NEGATION.sub("", sentence)))
    sides = []
    for up, down in _SCALES:
        is_up, is_down = up.search(sentence) is not None, down.search(sentence) is not None
        sides.append(0 if is_up == is_down else 1 if is_up else -1)
    return negations % 2, tuple(sides)


def _shingles(text: str) -> set[str]:
    lowered = text.lower()
    found = set(_WORD.findall(lowered))
    for run in _CJK.findall(lowered):
        found.update(run[i : i + 2] for i in range(max(1, len(run) - 1)))
    return found


def _closest(sentence: str, passage: str) -> str | None:
    """The passage sentence sharing the most words (CJK: character pairs) with `sentence`."""
    wanted = _shingles(sentence)
    best, best_shared = None, 0
    for candidate in _SENTENCE_END.split(passage):
        shared = len(wanted & _shingles(candidate))
        if shared > best_shared:
            best, best_shared = candidate, shared
    return best


def states_the_opposite(sentence: str, passage: str) -> bool:
    """Whether the passage's closest sentence to `sentence` differs from it in polarity or on a scale."""
    closest = _closest(sentence, passage)
    if closest is None:
        return False
    (negated, sides), (passage_negated, passage_sides) = polarity(sentence), polarity(closest)
    if negated != passage_negated:
        return True
    return any(a and b and a != b for a, b in zip(sides, passage_sides, strict=True))
