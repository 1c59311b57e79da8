"""Words of Chinese, Japanese and Korean text, which has no spaces between them.

Japanese text (any text holding kana) is cut by SudachiPy's morphological analyzer (core dictionary, split mode
C, normalised forms: `削除され` → `削除`, `為る`, `れる`); other CJK runs (Chinese, Korean, or SudachiPy not
installed) into overlapping character bigrams (`古いログ` → `古い`, `いロ`, `ログ`), which need no dictionary. Measured on
real Japanese documentation (docs/decisions/japanese.md): keyword section recall@5 0.533 (one token per run)
→ 0.767 with bigrams → 0.900 with SudachiPy. Text is NFKC-normalised first, so full-width `ＡＢＣ１２３` and
half-width `ｶﾀｶﾅ` meet their usual forms.
"""

from __future__ import annotations

import functools
import importlib.util
import re
import threading
import unicodedata
from collections.abc import Iterator
from typing import Any

__all__ = [
    "CJK_CLASS",
    "CJK_RUN",
    "RAW_CJK_RUN",
    "LazyPattern",
    "analyzer_id",
    "cjk_spans",
    "cjk_tokens",
    "cjk_words",
    "configure",
    "content_cjk_words",
    "has_cjk",
    "is_japanese",
    "normalize",
    "query_cjk_tokens",
    "sudachi_in_use",
]

# Hiragana, katakana (with its phonetic extensions and the prolonged-sound mark), CJK ideographs (with
# extension A and compatibility forms), Hangul syllables and jamo, and the iteration marks 々 〆 〇.
CJK_CLASS = (
    "\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u1100-\u11ff"
    "\u3130-\u318f\u3005-\u3007"
)


class LazyPattern:
    """A regular expression compiled on its first use. A class spanning the CJK blocks takes 1.5-2 ms to
    compile, ~6 ms for the few here and in text/tokens.py: a cost at every process's start, for text most
    processes never meet (`has_cjk` asks `str.isascii` first)."""

    __slots__ = ("_compiled", "pattern")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._compiled: re.Pattern[str] | None = None

    def _regex(self) -> re.Pattern[str]:
        if self._compiled is None:  # two threads may both compile it: the same pattern either way
            self._compiled = re.compile(self.pattern)
        return self._compiled

    def search(self, text: str) -> re.Match[str] | None:
        return self._regex().search(text)

    def match(self, text: str) -> re.Match[str] | None:
        return self._regex().match(text)

    def fullmatch(self, text: str) -> re.Match[str] | None:
        return self._regex().fullmatch(text)

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        return self._regex().finditer(text)

    def findall(self, text: str) -> list[str]:
        return self._regex().findall(text)

    def sub(self, replacement: str, text: str) -> str:
        return self._regex().sub(replacement, text)


CJK_RUN = LazyPattern(f"[{CJK_CLASS}]+")
# A CJK run of text not yet `normalize`d: half-width katakana too (NFKC makes it katakana).
RAW_CJK_RUN = LazyPattern(f"[{CJK_CLASS}\uff66-\uff9f]+")
_KANA = re.compile("[\u3041-\u3096\u30a1-\u30fa]")
_HIRAGANA_ONLY = re.compile("^[\u3040-\u309f]+$")
_HAN = LazyPattern("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3005-\u3007]")
# Parts of speech that are grammar, not content: particles, auxiliary verbs, suffixes (dropped from queries).
_FUNCTION_POS = frozenset({"助詞", "助動詞", "接尾辞"})
# Those that state a fact: nouns (names, numbers, terms) and adjectives. Verbs and adverbs are how a question
# is phrased ("how do I put it in", 入れる) more than what it is about, so the gate and the citation checker
# weigh only these (on ja-developers-reference, counting verbs refused 4 of 30 answerable questions).
_FACT_POS = frozenset({"名詞", "形容詞", "形状詞"})
# ... except those whose subclass says they work as grammar: nouns used as adverbs or conjunctions (時 "when",
# 場合 "if", 他 "other", 全て "all", 前 "before": English stop words), adjectives and nouns that follow
# another word (いい in すればいい, ほしい in してほしい), auxiliary stems (よう, みたい); and prefixes (再, 各, 非),
# which are parts of a word. They stay content (level 1), only no longer count as facts: a question's 時 or
# 他 matched half the sentences of every passage.
_GRAMMAR_SUBCLASSES = frozenset({"副詞可能", "非自立可能", "助動詞語幹"})
_SKIPPED_POS = frozenset({"補助記号", "空白", "記号"})
SEGMENTERS = ("auto", "sudachi", "bigram")

_lock = threading.Lock()
_local = threading.local()
_mode = "auto"


def configure(segmenter: str) -> None:
    """Choose how Japanese is cut ("auto": SudachiPy when installed); the index records the choice."""
    global _mode
    if segmenter not in SEGMENTERS:
        raise ValueError(f"unknown CJK segmenter {segmenter!r}; use one of {', '.join(SEGMENTERS)}")
    with _lock:
        if segmenter != _mode:
            _mode = segmenter
            _words.cache_clear()


@functools.lru_cache(maxsize=1)
def _sudachi_available() -> bool:
    """Whether SudachiPy and its dictionary are installed, found without importing them: the import took
    ~20 ms of every process's first search (the index records which analysis it was built with)."""
    return all(importlib.util.find_spec(name) is not None for name in ("sudachipy", "sudachidict_core"))


def _japanese_segmenter() -> str:
    if _mode == "bigram" or (_mode == "auto" and not _sudachi_available()):
        return "bigram"
    return "sudachi"


def sudachi_in_use() -> bool:
    """Japanese is cut by SudachiPy now (installed and not switched off), not into bigrams."""
    return _japanese_segmenter() == "sudachi"


def analyzer_id() -> str:
    """Names the analysis an index was built with; a different one means the index must be rebuilt. 4: CJK
    passages sized in real tokens (text/tokens.py; 3 made them ~1.6 times too long)."""
    return f"4:{_japanese_segmenter()}"


def has_cjk(text: str) -> bool:
    return not text.isascii() and CJK_RUN.search(text) is not None


def is_japanese(text: str) -> bool:
    return not text.isascii() and _KANA.search(text) is not None


def normalize(text: str) -> str:
    """NFKC for text that is not plain ASCII (ASCII is already normal, and most text is ASCII)."""
    return text if text.isascii() else unicodedata.normalize("NFKC", text)


def _tokenizer() -> Any:
    tok = getattr(_local, "sudachi", None)
    if tok is None:  # one per thread: a SudachiPy tokenizer is not thread-safe
        from sudachipy import Dictionary, SplitMode

        dictionary = Dictionary(dict="core")
        tok = _local.sudachi = dictionary.tokenizer(mode=SplitMode.C, fields={"pos", "normalized_form"})
    return tok


def _sudachi(run: str) -> tuple[tuple[str, int], ...]:
    out = []
    for morpheme in _tokenizer().tokenize(run):
        pos = morpheme.part_of_speech()
        if pos[0] not in _SKIPPED_POS:
            word = morpheme.normalized_form().lower()
            out.append((word, _level(pos, word)))
    return tuple(out)


def _level(pos: tuple[str, ...], word: str) -> int:
    """0 grammar, 1 content, 2 content that states a fact, from SudachiPy's part of speech. One hiragana
    standing alone (`や` between two names: "A や B") is a particle SudachiPy misreads without context."""
    if pos[0] in _FUNCTION_POS:
        return 0
    lone_kana = len(word) == 1 and _HIRAGANA_ONLY.match(word) is not None
    return 2 if pos[0] in _FACT_POS and _GRAMMAR_SUBCLASSES.isdisjoint(pos[1:3]) and not lone_kana else 1


def _bigrams(run: str) -> tuple[tuple[str, int], ...]:
    grams = [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]
    return tuple((g, 0 if _HIRAGANA_ONLY.match(g) else 2) for g in grams)


@functools.lru_cache(maxsize=65536)
def _words(run: str, japanese: bool) -> tuple[tuple[str, int], ...]:
    """(word, level): 0 grammar, 1 content, 2 content that states a fact."""
    if japanese and _japanese_segmenter() == "sudachi":
        return _sudachi(run)
    return _bigrams(run)


@functools.lru_cache(maxsize=8192)
def cjk_spans(run: str, japanese: bool) -> tuple[tuple[int, int, str, int], ...]:
    """(start, end, word, level) of each word of one CJK run as `cjk_tokens` cuts it, positions in `run`
    (already `normalize`d): what a snippet marks. Bigrams overlap; SudachiPy's words do not."""
    if japanese and _japanese_segmenter() == "sudachi":
        out = []
        for m in _tokenizer().tokenize(run):
            pos = m.part_of_speech()
            if pos[0] not in _SKIPPED_POS:
                word = m.normalized_form().lower()
                out.append((m.begin(), m.end(), word, _level(pos, word)))
        return tuple(out)
    grams = [(0, 1, run)] if len(run) == 1 else [(i, i + 2, run[i : i + 2]) for i in range(len(run) - 1)]
    return tuple((s, e, g, 0 if _HIRAGANA_ONLY.match(g) else 2) for s, e, g in grams)


def cjk_tokens(run: str, japanese: bool) -> tuple[tuple[str, int], ...]:
    """(word, level) of one CJK run in order: level 0 grammar, 1 content, 2 content that states a fact."""
    return _words(run, japanese)


def cjk_words(run: str, japanese: bool) -> list[str]:
    """Index words of one CJK run, in order, with repeats; `japanese`: the text around it holds kana."""
    return [w for w, _ in _words(run, japanese)]


def query_cjk_tokens(run: str, japanese: bool) -> tuple[tuple[str, int], ...]:
    """(word, level) of one CJK run of a query: as `cjk_tokens`; for a run without kana around it that holds
    ideographs, its bigrams and the Japanese nouns and adjectives among them that are not one of those bigrams.

    Such a query (`重要度`) may be Japanese, whose documents hold SudachiPy's words, or Chinese, whose documents
    hold bigrams: asked both ways it finds the word in either index (a form the index lacks scores nothing).
    A one-character word inside a longer run is left out: the bigrams hold that character already, and in
    Chinese text SudachiPy falls back to single characters.
    """
    if japanese or _HAN.search(run) is None or _japanese_segmenter() != "sudachi":
        return _words(run, japanese)
    both = dict(_bigrams(run))
    for word, level in _words(run, True):
        if level == 2 and (len(word) > 1 or len(run) == 1):
            both.setdefault(word, level)
    return tuple(both.items())


def content_cjk_words(run: str, japanese: bool, *, facts: bool = False) -> list[str]:
    """The words of a run that are not grammar (particles, auxiliaries, all-hiragana bigrams); with `facts`,
    only those that state a fact (nouns and adjectives)."""
    least = 2 if facts else 1
    return [w for w, level in _words(run, japanese) if level >= least]
