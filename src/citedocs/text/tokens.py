"""How many model tokens a text is, estimated without a tokenizer: passage sizes, prompt usage, history.

English BPE averages ~4 characters a token. Chinese, Japanese and Korean text costs far more a character:
measured with Qwen2.5's tokenizer on the passages of the Japanese manual (`bench/studies/token_estimate.py`,
bench/reports/token-estimate-2026-12-06.txt), 0.657 tokens a CJK character (kana, ideographs, hangul, their
punctuation and full-width forms) and 0.242 a character of anything else. Counting characters / 4 put a
Japanese passage at 0.60 of its tokens (median), so passages meant to be 400 tokens were ~650, longer than the
embedder reads (512) and twice the English prompts. Chinese and Korean paragraphs (a few sentences each, same
tokenizer) came to 0.58 and 0.60 tokens a character, estimated within 10%. Text without such characters is
counted as before.
"""

from __future__ import annotations

import math

from citedocs.text.cjk import CJK_CLASS, LazyPattern

__all__ = ["CHARS_PER_TOKEN", "TOKENS_PER_CJK_CHAR", "cjk_chars", "estimate_tokens", "tokens_for"]

CHARS_PER_TOKEN = 4
TOKENS_PER_CJK_CHAR = 0.65
# CJK characters and the punctuation and full-width forms written with them (、。「」！？（）, half-width kana).
_HEAVY_RUN = LazyPattern(f"[{CJK_CLASS}\u3000-\u303f\uff00-\uffef]+")
# Every such character is written in UTF-8 with a lead byte E1 (U+1000-U+1FFF) or E3-EF (U+3000-U+FFFF): text
# with none (SciFact's µ, – and “” are C2, CE, E2) is ruled out by one pass in C, 1.9 µs for 1,500 characters
# where the class above takes 9 µs (chunking SciFact: 57 ms, 100 ms with the class alone).
_NOT_LEADS = bytes(b for b in range(256) if b != 0xE1 and not 0xE3 <= b <= 0xEF)


def cjk_chars(text: str) -> int:
    """The characters of `text` that cost a CJK character's tokens (0 for ASCII, at once)."""
    if text.isascii() or not text.encode("utf-8", "surrogatepass").translate(None, _NOT_LEADS):
        return 0
    return sum(map(len, _HEAVY_RUN.findall(text)))


def tokens_for(length: int, cjk: int = 0) -> int:
    """Tokens of a text of `length` characters, `cjk` of them CJK (`cjk_chars`); at least 1 unless empty."""
    if not length:
        return 0
    if not cjk:
        return max(1, (length + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN)
    return max(1, math.ceil((length - cjk) / CHARS_PER_TOKEN + cjk * TOKENS_PER_CJK_CHAR))


def estimate_tokens(text: str) -> int:
    return tokens_for(len(text), cjk_chars(text))
