"""What the CLI prints to a terminal: file names, document text and model output are data, never terminal
control.

A document (or a model it steers) could otherwise clear the screen, set the window title or rewrite what the
user sees with ESC/CSI sequences, a carriage return or a bidi override, and a newline in a file name could
forge an output line. Every print point of human output passes its text through `shown` (text that may span
lines: a file's text, an answer) or `one_line` (names, headings, snippets, reasons). Each control character
is written visibly (`\\x1b`, `\\u202e`), one character at a time, so a sequence split across streamed tokens is
broken as well. `--json` output is JSON, which escapes them already, and does not pass through here.
"""

from __future__ import annotations

import re

__all__ = ["one_line", "shown"]

# C0 controls except tab and newline, DEL, C1 controls (0x9b is CSI on 8-bit terminals), line and paragraph
# separators, and the bidi embeddings, overrides and isolates.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_CONTROL_OR_BREAK = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def shown(text: object) -> str:
    """`text` safe for a terminal; its newlines and tabs stay."""
    return _CONTROL.sub(_visible, str(text))


def one_line(text: object) -> str:
    """`text` safe for a terminal, on one line: newlines and tabs are written `\\x0a`, `\\x09` too."""
    return _CONTROL_OR_BREAK.sub(_visible, str(text))
