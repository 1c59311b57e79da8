"""Every form a Japanese, Chinese or Korean query can take finds the words the index holds: a query and its
documents are analysed the same way (issue 47: `重要度` asked alone was cut into Chinese bigrams while the
Japanese index holds the word)."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from citedocs.service import Citedocs
from citedocs.settings import Settings
from citedocs.text.analyzer import query_terms
from citedocs.text.cjk import CJK_RUN
from conftest import shared

DOCS = {
    "ja.md": "# 重要度\n\nバグの重要度は報告者が決めます。サーバーのメンテナンスは毎週行います。\n\n"
    "## 設定\n\n表を見てから設定を変更してください。古いログは削除されます。\n",
    "ja_heading.md": "# パッケージの管理\n\n## 開発者責任\n\n新しい版をアップロードする前に確認する。\n",
    "zh.md": "# 日志轮转\n\n数据库的日志每天轮转一次。\n",
    "ko.md": "# 한국어 문서\n\n데이터베이스 로그는 매일 회전합니다.\n",
}


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Citedocs:
    tmp = tmp_path_factory.mktemp("cjk")
    docs = tmp / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    app = Citedocs(Settings(db=str(tmp / "index.sqlite3"), embedder="none"))
    app.add_folder(docs)
    app.index()
    return app


def _index_words(db: str) -> dict[str, set[str]]:
    """Each CJK term the index holds, and the files whose chunks hold it (heading or body)."""
    conn = sqlite3.connect(db)
    rows = conn.execute(
        "SELECT d.path, f.heading, f.body FROM chunks_fts f JOIN chunks c ON c.id = f.rowid "
        "JOIN documents d ON d.id = c.document_id"
    ).fetchall()
    conn.close()
    out: dict[str, set[str]] = {}
    for path, heading, body in rows:
        for term in f"{heading} {body}".split():
            if CJK_RUN.fullmatch(term):
                out.setdefault(term, set()).add(Path(path).name)
    return out


def _found(app: Citedocs, query: str, files: set[str]) -> bool:
    hits = app.search(query, k=3, mode="keyword").hits
    return any(Path(h.path).name in files for h in hits)


def _japanese_words(text: str) -> set[tuple[str, str]]:
    """(as a user types it, as indexed) of each content word of a Japanese text, by the analyzer citedocs uses:
    a noun as written, a verb or adjective in its dictionary form (決める, not the stem 決め)."""
    from sudachipy import Dictionary, SplitMode

    tokenizer = Dictionary(dict="core").tokenizer(mode=SplitMode.C)
    return {
        (
            m.dictionary_form() if m.part_of_speech()[0] in _CONJUGATED else m.surface(),
            m.normalized_form().lower(),
        )
        for run in CJK_RUN.findall(text)
        for m in tokenizer.tokenize(run)
        if m.part_of_speech()[0] not in {"助詞", "助動詞", "接尾辞", "補助記号", "空白", "記号"}
    }


_CONJUGATED = {"動詞", "形容詞"}
# Words as a user would type them in each language, and a question around them in that language.
CHINESE = ("日志", "轮转", "数据库", "每天", "一次", "日志轮转")
KOREAN = ("한국어", "문서", "데이터베이스", "로그는", "매일", "회전합니다")


def _forms(word: str, language: str) -> list[str]:
    around = {
        "ja": ["{}について", "「{}」とは？", "{}はどこ"],
        "zh": ["关于{}", "{}是什么？"],
        "ko": ["{}에 대해", "{}란 무엇입니까?"],
    }[language]
    forms = [word, *(f.format(word) for f in around)]
    half = word.translate(_HALF_WIDTH)
    return forms + ([half] if half != word else [])  # half-width katakana meets its usual form


def test_every_word_in_the_index_is_found_by_every_form_of_query(app: Citedocs) -> None:
    index = _index_words(app.settings.db)
    # The words issue 47 names, in each language, of 1 to 6 characters, are really in the index.
    for word in ("重要度", "メンテナンス", "表", "設定", "開発者", "責任", "日志", "轮转", "한국", "데이"):
        assert word in index, word
    asked: list[tuple[str, str, set[str]]] = []
    for name in ("ja.md", "ja_heading.md"):
        for surface, indexed in _japanese_words(DOCS[name]):
            assert name in index[indexed], (surface, indexed)
            asked += [(form, "ja", {name}) for form in _forms(surface, "ja")]
    asked += [(form, "zh", {"zh.md"}) for word in CHINESE for form in _forms(word, "zh")]
    asked += [(form, "ko", {"ko.md"}) for word in KOREAN for form in _forms(word, "ko")]
    assert len({len(form) for form, _, _ in asked} & {1, 2, 3}) == 3  # queries of 1, 2 and 3 characters
    missed = [(form, language) for form, language, files in asked if not _found(app, form, files)]
    assert missed == [], missed


def test_a_kanji_only_query_is_asked_as_japanese_words_and_as_bigrams() -> None:
    assert set(query_terms("重要度")) == {"重要度", "重要", "要度"}
    assert query_terms("表") == ["表"]
    # Chinese keeps its bigrams and gains no single characters or Japanese verbs
    assert query_terms("日志轮转") == ["日志", "志轮", "轮转"]
    assert query_terms("数据库") == ["数据", "据库"]
    assert query_terms("한국어") == ["한국", "국어"]


def test_a_kanji_only_heading_of_a_japanese_page_is_indexed_as_japanese_words(app: Citedocs) -> None:
    words = _index_words(app.settings.db)
    assert "ja_heading.md" in words["開発者"] and "ja_heading.md" in words["責任"]
    assert "ja_heading.md" not in words.get("発者", set())  # not the bigrams of Chinese


def test_kanji_only_and_abbreviated_queries_over_the_real_japanese_manual(tmp_path: Path) -> None:
    data = shared("ja-developers-reference") / "docs"
    holding = {p.name for p in data.rglob("*") if p.is_file() and "重要度" in p.read_text(errors="ignore")}
    assert len(holding) >= 3
    app = Citedocs(Settings(db=str(tmp_path / "index.sqlite3"), embedder="none"))
    try:
        app.add_folder(data)
        app.index()
        hits = app.search("重要度", k=10, mode="keyword").hits
        assert hits and Path(hits[0].path).name in holding
        assert "重要度" in hits[0].text
        service = app.answer_service(None)

        async def gate(question: str) -> bool:
            return (await service.prepare(question, mode="keyword")).gate.allowed

        # Questions a user types: kanji only, or "メンテ" where the manual writes メンテナンス and メンテナ.
        for question in ("重要度", "バグの重要度", "メンテの責任を数人でシェアするには？", "共同メンテ"):
            assert asyncio.run(gate(question)), question
        # and off-topic ones are still refused before the model
        for question in ("寿司の握り方", "重要文化財の見学時間"):
            assert not asyncio.run(gate(question)), question
    finally:
        app.close()


_HALF_WIDTH = str.maketrans(
    dict(
        zip(
            "アイウエオカキクケコサシスセソタチツテトナニヌネノハヒフヘホマミムメモヤユヨラリルレロワンー",
            "ｱｲｳｴｵｶｷｸｹｺｻｼｽｾｿﾀﾁﾂﾃﾄﾅﾆﾇﾈﾉﾊﾋﾌﾍﾎﾏﾐﾑﾒﾓﾔﾕﾖﾗﾘﾙﾚﾛﾜﾝｰ",
            strict=True,
        )
    )
)


def test_a_lazy_pattern_answers_as_the_compiled_regex_would() -> None:
    import re

    from citedocs.text.cjk import CJK_CLASS, LazyPattern

    source = f"[{CJK_CLASS}]+"
    lazy, compiled = LazyPattern(source), re.compile(source)
    for text in ["rotate the logs", "ログを ローテート する", "日本語のログもrotateする。", "", "全角ＡＢＣ"]:
        assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in compiled.finditer(text)]
        assert lazy.findall(text) == compiled.findall(text) and lazy.sub(" ", text) == compiled.sub(" ", text)
        for method in ("search", "match", "fullmatch"):
            mine, theirs = getattr(lazy, method)(text), getattr(compiled, method)(text)
            assert (mine and mine.span()) == (theirs and theirs.span())


def test_english_text_never_compiles_the_cjk_patterns() -> None:
    """Compiling them cost ~6 ms of every process's start (text/cjk.py); English-only work does not need them."""
    import subprocess
    import sys

    code = (
        "from citedocs.text import cjk, tokens\n"
        "from citedocs.text.analyzer import query_terms\n"
        "from citedocs.text.terms import extract_terms\n"
        "query_terms('how do I rotate the logs?'); extract_terms('Rotate logs weekly.')\n"
        "tokens.estimate_tokens('Rotate logs weekly.')\n"
        "print([p._compiled is None for p in (cjk.CJK_RUN, cjk.RAW_CJK_RUN, cjk._HAN, tokens._HEAVY_RUN)])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[True, True, True, True]"
