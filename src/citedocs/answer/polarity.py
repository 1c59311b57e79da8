"""Does a passage state the opposite of a sentence? Content words alone cannot tell: "Zebras do not need 20
liters of water per day" shares every content term with "Zebras need 20 liters of water per day".

Pure and lexical, in English and Japanese. The passage sentence that shares most words with the answer
sentence (at least half of them; else there is nothing to compare) is compared with it:

- negation, English: a negation (not, no, never, none, n't, without, cannot) reaches the next few words of its
  clause, and the negative side of a yes/no pair reads as "not" + the positive side (disabled = not enabled,
  optional = not required, excluded = not included, false = not true). The two say opposite things when a word
  they share is negated in one and not in the other, so "is not enabled" agrees with "is disabled", and a
  negation in another clause of the passage ("If you don't have a key, ...") does not count;
- negation, Japanese: one sentence is negated (ない, ません, 不要, 不可, 無効, 禁止, 任意, ...; the double negative
  of obligation, しなければならない, is not) and the other is not;
- direction on a scale, where each side excludes the other: before/after, more than/less than (at least,
  minimum, above... against at most, maximum, below...), all/some (all, every, always against some,
  sometimes, several...); 以前/以降, 以上/以下, すべて/一部.

Over the 23 answer runs eval/baseline held on 2026-12-06 (719 answers, 1,981 checked sentences;
bench/studies/polarity_effect.py; the runs are in git history) this changes the verdict of one sentence (a code
block). Numbers are compared by the citation check itself (every number must appear).
"""

from __future__ import annotations

import re

__all__ = ["negated_words", "states_the_opposite"]

_EN_NEGATION = re.compile(
    r"^(?:not|no|never|none|nothing|nobody|neither|nor|cannot|can't|without|\w+n't)$", re.IGNORECASE
)
# The negative side of a yes/no pair is read as "not" + its positive side: "disabled" = "not enabled".
_EN_NEGATIVE_SIDE = {
    "disabled": "enabled",
    "disable": "enable",
    "disables": "enables",
    "optional": "required",
    "excluded": "included",
    "exclude": "include",
    "excludes": "includes",
    "false": "true",
    "deny": "allow",
    "denies": "allows",
    "denied": "allowed",
    "forbid": "allow",
    "forbids": "allows",
    "forbidden": "allowed",
    "prohibit": "allow",
    "prohibits": "allows",
    "prohibited": "allowed",
    "disallow": "allow",
    "disallows": "allows",
    "disallowed": "allowed",
    "unnecessary": "necessary",
}
# A negation reaches the next few words of its clause ("do not need 20 liters": need, 20, liters).
NEGATION_REACH = 4
_CLAUSE_END = frozenset({",", ";", ":", "but", "and", "or", "if", "when", "unless", "because", "so", "which"})
_FUNCTION_WORDS = frozenset(
    str.split(
        "a an the of to in on at for by with from as is are was were be been being do does did this that these "
        "those it its your you we they their our any yet"
    )
)
_EN_TOKEN = re.compile(r"[A-Za-z0-9_]+(?:'[a-z]+)?|[,;:]")
_EN_NOT_NEGATION = re.compile(r"\bnot (?:only|just|merely)\b|\bno longer\b(?=.*\bbut\b)", re.IGNORECASE)
# Japanese: negative endings and the negative side of yes/no pairs. The double negative of obligation
# (しなければならない, "must") is removed first: it is no negation.
_JA_NEGATION = re.compile("ない|ません|なく|無い|無く|無し|なし|不要|不可|不必要|無効|禁止|任意|できず|せず")
_JA_NOT_NEGATION = re.compile(
    "(?:なければ|なくては|ないと)(?:ならな[いく]|なりません|いけな[いく]|いけません|だめ)|少な[いく]|危な[いく]|切な[いく]"
)
_SCALES: tuple[tuple[re.Pattern[str], re.Pattern[str]], ...] = tuple(
    (re.compile(up, re.IGNORECASE), re.compile(down, re.IGNORECASE))
    for up, down in (
        (
            r"\bbefore\b|\bprior to\b|\bearlier than\b|以前|より前|前に",
            r"\bafter\b|\blater than\b|以降|以後|より後|後に",
        ),
        (
            r"\b(?:(?:more|greater|higher|larger|longer) than|above|exceeds?|at least|minimum)\b|以上|超え|最小|最低",
            r"\b(?:(?:less|fewer|lower|smaller|shorter) than|below|at most|maximum)\b|以下|未満|最大|最高",
        ),
        (
            r"\b(?:all|every|always)\b|すべて|全て|全部|常に|必ず",
            r"\b(?:some|sometimes|several|occasionally|rarely)\b|一部|いくつか|場合がある|ことがある",
        ),
    )
)
# The polarity of two sentences is compared only when the passage's sentence holds at least this share of the
# answer sentence's words: a long answer sentence that merges several facts is left to the term check.
MIN_SHARED = 0.5
_WORD = re.compile(r"[a-z0-9]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|[。！？\n]+")


def negated_words(sentence: str) -> tuple[frozenset[str], frozenset[str]]:
    """(content words of an English sentence, those of them that only ever appear negated)."""
    text = _EN_NOT_NEGATION.sub(" ", sentence.replace("\u2019", "'"))
    seen: set[str] = set()
    plain: set[str] = set()
    negated: set[str] = set()
    reach = 0
    for token in _EN_TOKEN.findall(text):
        word = token.lower()
        if word in _CLAUSE_END:
            reach = 0
            continue
        if _EN_NEGATION.match(word):
            reach = NEGATION_REACH
            continue
        inside = reach > 0
        reach = max(reach - 1, 0)
        if word in _EN_NEGATIVE_SIDE:  # "disabled" is "not enabled"; "not disabled" is "enabled"
            word, inside = _EN_NEGATIVE_SIDE[word], not inside
            reach = NEGATION_REACH - 1 if inside else 0
        if word in _FUNCTION_WORDS:
            continue
        word = word.removesuffix("s") if len(word) > 3 else word
        seen.add(word)
        (negated if inside else plain).add(word)
    return frozenset(seen), frozenset(negated - plain)


def japanese_negated(sentence: str) -> bool:
    return _JA_NEGATION.search(_JA_NOT_NEGATION.sub("", sentence)) is not None


def scale_sides(sentence: str) -> tuple[int, ...]:
    """Direction on each scale: 1 up, -1 down, 0 neither or both."""
    sides = []
    for up, down in _SCALES:
        is_up, is_down = up.search(sentence) is not None, down.search(sentence) is not None
        sides.append(0 if is_up == is_down else 1 if is_up else -1)
    return tuple(sides)


def _shingles(text: str) -> set[str]:
    lowered = text.lower()
    found = set(_WORD.findall(lowered))
    for run in _CJK.findall(lowered):
        found.update(run[i : i + 2] for i in range(max(1, len(run) - 1)))
    return found


def _closest(sentence: str, passage: str) -> str | None:
    """The passage sentence sharing the most words (CJK: character pairs) with `sentence`, if it shares at
    least MIN_SHARED of them."""
    wanted = _shingles(sentence)
    best, best_shared = None, 0
    for candidate in _SENTENCE_END.split(passage):
        shared = len(wanted & _shingles(candidate))
        if shared > best_shared:
            best, best_shared = candidate, shared
    return best if wanted and best_shared >= MIN_SHARED * len(wanted) else None


def states_the_opposite(sentence: str, passage: str) -> bool:
    """Whether the passage's closest sentence to `sentence` says the opposite: a word they share is negated in
    one and not in the other (Japanese: one is negated, the other not), or they go opposite ways on a scale."""
    closest = _closest(sentence, passage)
    if closest is None:
        return False
    if _CJK.search(sentence) and _CJK.search(closest):
        if japanese_negated(sentence) != japanese_negated(closest):
            return True
    else:
        words, negated = negated_words(sentence)
        passage_words, passage_negated = negated_words(closest)
        if (negated ^ passage_negated) & words & passage_words:
            return True
    sides, passage_sides = scale_sides(sentence), scale_sides(closest)
    return any(a and b and a != b for a, b in zip(sides, passage_sides, strict=True))
