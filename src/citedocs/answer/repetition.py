"""Where a model's answer has begun to repeat itself, so that generation stops there.

The 1.5B model at temperature 0.1 sometimes loops to the token cap ("…such as generating high-quality prompts
for specific tasks, such as generating…", "58. Connect your API key. 59. Connect your API key. …"): 5 of the
866 answers in the committed eval/baseline runs, 25-42 s of generation each, and the reader is shown the same
line dozens of times; the guard cuts those 5 and none of the other 861. A run of at least `repeats` copies of
one unit that holds a letter, `MIN_SPAN` characters in all, is a loop: code, tables and separators rarely
repeat a line that contains words four times in a row.
"""

from __future__ import annotations

import re

# copies of one line or clause at the end of an answer that stop generation (5 of 866 claude-docs answers)
STOP_REPEATS = 4
MIN_UNIT = 3
MAX_UNIT = 300
MIN_SPAN = 120
# how much new text arrives between two checks; all the checks of one answer take 0.05 ms P50, 9 ms for the
# longest committed answer (bench/studies/bench_repetition.py)
CHECK_EVERY = 32

# a list's item numbers: the only digits a loop changes (a table's numbers are its content)
_DIGITS = re.compile(r"(?m)^[ \t]*\d+(?=[.)])")
# where the kept copy ends: a sentence or clause mark, or the end of its line
_COPY_END = re.compile(r"[.!?;:,](?=\s|$)|[。．！？、，；：]|(?=\n)")


def _masked(text: str) -> tuple[str, list[int]]:
    """`text` with each list item's number as one "0" (a numbered list that loops counts up), and for each
    masked character the offset in `text` where it starts (one more entry: len(text))."""
    chars: list[str] = []
    offsets: list[int] = []
    last = 0
    for match in _DIGITS.finditer(text):
        chars.extend(text[last : match.start()])
        offsets.extend(range(last, match.start()))
        chars.append("0")
        offsets.append(match.start())
        last = match.end()
    chars.extend(text[last:])
    offsets.extend(range(last, len(text)))
    offsets.append(len(text))
    return "".join(chars), offsets


def loop_start(text: str, repeats: int = STOP_REPEATS) -> int | None:
    """The offset in `text` just after the first copy of a unit that the rest of `text` only repeats (moved on
    to the end of its clause or line), or None when `text` does not end in a loop. `text[:loop_start(text)]`
    keeps the answer and one copy. `repeats` is at least 2."""
    masked, offsets = _masked(text)
    size = len(masked)
    for unit in range(MIN_UNIT, min(MAX_UNIT, size // repeats) + 1):
        count = max(repeats, -(-MIN_SPAN // unit))
        if count * unit > size or masked[-unit:] != masked[-2 * unit : -unit]:
            continue
        tail = masked[-unit:]
        if masked[-count * unit :] != tail * count or not any(ch.isalpha() for ch in tail):
            continue
        start = size - count * unit
        while start > 0 and masked[start - 1] == masked[start - 1 + unit]:
            start -= 1
        cut = offsets[start + unit]
        last_mark = max(len(text[:cut].rstrip(" \t")) - 1, 0)
        end = _COPY_END.search(text, last_mark, offsets[min(start + 2 * unit, size)])
        return end.end() if end else cut
    return None


class RepetitionGuard:
    """Fed the answer's pieces as they stream; says where to cut once the text has begun to loop."""

    def __init__(self, repeats: int = STOP_REPEATS) -> None:
        self.repeats = repeats
        self.text = ""
        self._checked = 0

    def feed(self, piece: str) -> int | None:
        """The cut offset (see `loop_start`) once the text so far ends in a loop, else None."""
        self.text += piece
        if len(self.text) - self._checked < CHECK_EVERY:
            return None
        self._checked = len(self.text)
        return loop_start(self.text, self.repeats)
