"""text/fts5.py against SQLite's own FTS5 tokenizer: the tokens (and so the counts) an in-memory BM25 needs."""

from __future__ import annotations

import sqlite3

import pytest

from citedocs.text.analyzer import FTS_TOKENIZER, index_text
from citedocs.text.fts5 import fts5_token, fts5_tokens

TEXTS = [
    "café Café ÉCOLE naïve ǅ ß straße ø Ø łódź İstanbul",
    "ガイド 削除 ・ア・イ ｶﾅ ﾊﾟ 〇 〆 ㍿ ① ½ ²",
    "a.b-c_d x.y. ΣΑΣ Ωμέγα ᾳ ǲ Ǳ",
    index_text("古いログはいつ削除されますか？ useState --dry-run v2.3 /etc/fstab naïve résumé"),
]


@pytest.mark.parametrize("text", TEXTS)
def test_tokens_are_what_fts5_indexes(text: str) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute(f'CREATE VIRTUAL TABLE f USING fts5 (body, tokenize = "{FTS_TOKENIZER}")')
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab (f, 'instance')")
    conn.execute("INSERT INTO f (rowid, body) VALUES (1, ?)", (text,))
    expected = [r[0] for r in conn.execute("SELECT term FROM v ORDER BY offset")]
    assert fts5_tokens(text) == expected


def test_a_separator_inside_a_term_makes_several_tokens() -> None:
    assert fts5_token("ア・イ") == ("ア", "イ")
    assert fts5_token("Naïve") == ("naive",)
