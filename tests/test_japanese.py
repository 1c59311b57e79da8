"""Japanese (and Chinese, Korean) text: words for the index, the query, the gate, the citation checker and
link ranking, checked on phrases whose right analysis is known and on the real Japanese Debian manual."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import pytest

from citedocs.answer.citations import check_citations
from citedocs.answer.gate import relevance_decision
from citedocs.hits import Hit
from citedocs.index.reanalysis import ANALYZER_KEY, STALE_NOTE
from citedocs.search.distinct import PASSAGE_OVERLAP, distinct_indexes
from citedocs.service import Citedocs
from citedocs.settings import Settings
from citedocs.text import cjk
from citedocs.text.analyzer import query_terms, terms
from citedocs.text.links import tokenize
from citedocs.text.terms import extract_terms
from conftest import shared

QUESTION = "古いログはいつ削除されますか？"


def test_a_japanese_sentence_is_words_not_one_token() -> None:
    assert terms(QUESTION)[:5] == ["古い", "ログ", "は", "いつ", "削除"]
    # particles and endings are indexed (term frequencies) but never searched for
    assert query_terms(QUESTION) == ["古い", "ログ", "いつ", "削除", "為る"]


def test_identifiers_and_paths_stay_whole_inside_japanese_text() -> None:
    found = terms("設定は /etc/fstab に書き、sudo で mount -a を実行する。useStateフックも")
    assert {"etc_fstab", "sudo", "mount", "usestate", "use", "state", "設定", "実行"} <= set(found)


def test_full_width_and_half_width_forms_meet_their_usual_forms() -> None:
    assert terms("ＡＢＣ１２３ のｶﾀｶﾅ") == terms("ABC123 のカタカナ")
    assert "abc123" in terms("ＡＢＣ１２３")


def test_chinese_and_korean_are_cut_into_bigrams() -> None:
    assert terms("中文分词") == ["中文", "文分", "分词"]
    assert terms("한국어") == ["한국", "국어"]
    assert query_terms("日志轮转") == ["日志", "志轮", "轮转"]


def test_english_is_analysed_as_before() -> None:
    assert terms("Rotating the logs with useState") == [
        "rotat",
        "the",
        "log",
        "with",
        "use",
        "state",
        "usestate",
    ]


def test_the_bigram_segmenter_can_be_forced_and_is_recorded() -> None:
    try:
        cjk.configure("bigram")
        assert cjk.analyzer_id() == "4:bigram"
        assert terms("古いログ") == ["古い", "いロ", "ログ"]
    finally:
        cjk.configure("auto")
    assert cjk.analyzer_id() == "4:sudachi"
    with pytest.raises(ValueError, match="unknown CJK segmenter"):
        cjk.configure("mecab")


def test_analysis_gives_the_same_words_in_many_threads() -> None:
    texts = [f"{QUESTION} パッケージ{i}をアップロードする前に lintian を実行します。" for i in range(200)]
    expected = [terms(t) for t in texts]
    results: list[list[list[str]]] = [[] for _ in range(4)]

    def work(slot: int) -> None:
        results[slot] = [terms(t) for t in texts]

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(r == expected for r in results)


def test_content_terms_keep_facts_and_drop_grammar_and_framing() -> None:
    found = extract_terms("ドキュメントによると、古いログは 30 日後に削除されます。")
    assert found.numbers == {"30"}
    assert {"古い", "ログ", "削除"} <= found.words
    assert not found.words & {"は", "に", "ます", "ドキュメント", "よる"}


def test_words_that_work_as_grammar_are_searched_for_but_state_no_fact() -> None:
    # 時 "when", 他 "other", 全て "all" (nouns used as adverbs), いい in すればいい and ほしい in してほしい,
    # よう, 各 and 再 (prefixes), こと, and や standing alone: English stop words, in effect
    question = "新しいパッケージを作るときは、ほかの開発者に全て再ビルドしてほしいようだ。どうすればいい？"
    found = extract_terms(question)
    assert {"新しい", "パッケージ", "開発者", "ビルド"} <= found.words
    assert not found.words & {"時", "他", "全て", "欲しい", "良い", "よう", "再"}
    assert not extract_terms("各パッケージでやるべきこと").words & {"各", "こと"}
    assert "や" not in extract_terms("README.Debian や debconf の note").words
    # retrieval is unchanged: only particles and endings are left out of a query
    assert {"時", "他"} <= set(query_terms(question))


def _hit(text: str, heading: str = "ログ") -> Hit:
    return Hit("c1", "/docs/logs.md", "/docs", heading, None, 1, 3, 1.0, text)


def test_the_gate_passes_a_japanese_question_the_passage_answers_and_refuses_an_off_topic_one() -> None:
    passage = _hit(
        "古いログは logrotate により 30 日後に削除されます。設定は /etc/logrotate.conf にあります。"
    )
    assert relevance_decision(QUESTION, [passage]).allowed
    refused = relevance_decision("美味しいラーメンの作り方を教えてください", [passage])
    assert not refused.allowed and refused.best < 0.5


def test_the_citation_checker_supports_a_japanese_sentence_by_its_passage_only() -> None:
    hits = [
        _hit("古いログは logrotate により 30 日後に削除されます。"),
        _hit("パッケージは dput でアップロードします。", heading="アップロード"),
    ]
    good = check_citations("古いログは 30 日後に削除されます [1]。", hits)
    assert [s.supported for s in good.sentences] == [True]
    wrong = check_citations("古いログは 30 日後に削除されます [2]。", hits)
    assert wrong.sentences[0].repaired and wrong.sentences[0].supported_by == [1] and wrong.citations == [1]
    unsupported = check_citations("ラーメンは 3 分で茹でます [1]。", hits)
    assert [s.supported for s in unsupported.sentences] == [False]


def test_link_titles_in_japanese_are_ranked_by_their_words() -> None:
    assert tokenize("パッケージの取扱い方 (DELAYED)") == ["パッケージ", "取り扱う", "delay", "delayed"]


@pytest.mark.parametrize("older", ["1", "3:sudachi"])  # 3: passages sized at characters / 4
def test_an_index_built_by_the_older_analysis_says_so_and_reindex_fixes_it(
    tmp_path: Path, older: str
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    long_section = "\n\n".join(
        f"古いログは {i} 日後に削除され、設定ファイルで変更できます。" * 6 for i in range(30)
    )
    (docs / "logs.md").write_text(f"# ログ\n\n{long_section}\n", encoding="utf-8")
    app = Citedocs(Settings(db=str(tmp_path / "index.sqlite3"), embedder="none"))
    try:
        app.add_folder(docs)
        app.index()
        assert app.search(QUESTION, mode="keyword").note is None
        app.store.set_meta(ANALYZER_KEY, older)  # as an index of an earlier release
        assert STALE_NOTE in (app.search(QUESTION, mode="keyword").note or "")
        [report] = app.index()
        assert report.indexed == 1  # the unchanged file is indexed again, not skipped
        result = app.search(QUESTION, mode="keyword")
        assert result.note is None and result.hits[0].path.endswith("logs.md")
    finally:
        app.close()


def test_an_english_index_from_the_older_analysis_is_simply_marked_current(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "logs.md").write_text("# Logs\n\nOld logs are deleted after 30 days.\n")
    app = Citedocs(Settings(db=str(tmp_path / "index.sqlite3"), embedder="none"))
    try:
        app.add_folder(docs)
        app.index()
        app.store.set_meta(ANALYZER_KEY, "1")
        assert app.search("when are old logs deleted", mode="keyword").note is None
        assert app.store.get_meta(ANALYZER_KEY) == cjk.analyzer_id()
    finally:
        app.close()


def test_japanese_only_questions_find_their_page_in_the_real_manual(tmp_path: Path) -> None:
    data = shared("ja-developers-reference")
    cases = [json.loads(line) for line in (data / "cases.jsonl").read_text(encoding="utf-8").splitlines()]
    app = Citedocs(Settings(db=str(tmp_path / "index.sqlite3"), embedder="none"))
    try:
        app.add_folder(data / "docs")
        app.index()
        answerable = [c for c in cases if c["kind"] == "answerable"]
        found = sum(
            any(
                Path(h.path).name == Path(c["evidence"][0]["file"]).name
                for h in app.search(c["question"], k=5, mode="keyword").hits
            )
            for c in answerable
        )
        assert found / len(answerable) >= 0.9
        for case in answerable:  # the distinct search (sketch screen) keeps what the filter's rule keeps
            raw = app.search(case["question"], k=10, mode="keyword").hits
            kept = [raw[i].chunk_id for i in distinct_indexes([h.text for h in raw], 5, PASSAGE_OVERLAP)]
            distinct = app.search(case["question"], k=5, mode="keyword", distinct=True).hits
            assert [h.chunk_id for h in distinct] == kept, case["question"]
        service = app.answer_service(None)

        async def gate(question: str) -> bool:
            return (await service.prepare(question, mode="keyword")).gate.allowed

        off_topic = [c["question"] for c in cases if c["kind"] == "off_topic"]
        assert off_topic and not any(asyncio.run(gate(q)) for q in off_topic)
        passed = sum(asyncio.run(gate(c["question"])) for c in answerable)
        assert passed >= len(answerable) - 2
    finally:
        app.close()


def test_japanese_answers_are_split_at_full_width_terminals_with_their_citations() -> None:
    from citedocs.answer.sentences import split_sentences

    answer = "古いログは削除されます [1]。設定は /etc/logrotate.conf にあります。[2]本当ですか？はい、「そうです」。"
    assert [answer[s.start : s.end] for s in split_sentences(answer)] == [
        "古いログは削除されます [1]。",
        "設定は /etc/logrotate.conf にあります。[2]",
        "本当ですか？",
        "はい、「そうです」。",
    ]


def _folder(root: Path, files: dict[str, str]) -> Path:
    root.mkdir()
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


JA_FILES = {
    "logs.md": "# ログの保存期間\n\n古いログは logrotate により 30 日後に削除されます。\n",
    "upload.md": "# アップロード\n\nパッケージは dput で ftp-master にアップロードします。遅延アップロードは DELAYED キューを使います。\n",
    "keys.md": "# 署名鍵\n\nアップロードするパッケージには OpenPGP 鍵で署名します。\n",
}


def test_the_auto_embedder_gives_a_japanese_index_the_multilingual_model_and_remembers(
    tmp_path: Path,
) -> None:
    from citedocs.embed.auto import CHOICE_KEY
    from citedocs.errors import ModelMismatchError

    docs = _folder(tmp_path / "docs", JA_FILES)
    db = str(tmp_path / "index.sqlite3")
    app = Citedocs(Settings(db=db))
    try:
        assert app.embedder is not None and app.embedder.name.startswith("auto (")
        app.add_folder(docs)
        app.index()
        app.embed()
        assert app.store.get_meta(CHOICE_KEY) == "multilingual"
        assert "e5" in app.embedder.name
    finally:
        app.close()
    again = Citedocs(Settings(db=db))  # a later process agrees without looking at the text again
    try:
        assert again.embedder is not None and "e5" in again.embedder.name
        hits = again.search("鍵で署名する", mode="semantic", wait_for_model=True).hits
        assert hits and hits[0].path.endswith("keys.md")
    finally:
        again.close()
    forced = Citedocs(Settings(db=db, embedder="local"))
    try:
        with pytest.raises(ModelMismatchError, match="reindex --force"):
            forced.embed()
    finally:
        forced.close()


def test_the_auto_embedder_keeps_minilm_for_an_english_index(tmp_path: Path) -> None:
    from citedocs.embed.auto import CHOICE_KEY

    docs = _folder(
        tmp_path / "docs", {"logs.md": "# Logs\n\nOld logs are deleted after 30 days by logrotate.\n"}
    )
    app = Citedocs(Settings(db=str(tmp_path / "index.sqlite3")))
    try:
        app.add_folder(docs)
        app.index()
        app.embed()
        assert app.store.get_meta(CHOICE_KEY) == "latin"
        assert app.embedder is not None and "MiniLM" in app.embedder.name
    finally:
        app.close()


def test_a_japanese_question_asks_for_a_japanese_answer_and_the_english_refusal_and_english_is_unchanged() -> (
    None
):
    from citedocs.answer.citations import is_refusal
    from citedocs.answer.prompt import REFUSAL_SENTENCE, REFUSAL_SENTENCES, build_messages

    passage = _hit("古いログは 30 日後に削除されます。")
    japanese, _ = build_messages(QUESTION, [passage], fence="a" * 16)
    # The reminder after the question carries the language; the refusal the model is asked for is the English
    # one (answer/prompt.py says why), the reader's is Japanese (test_answer_service.py).
    rules = japanese[1]["content"].rsplit("<<<END QUESTION", 1)[1]
    assert "Write the answer in Japanese" in rules and REFUSAL_SENTENCE in rules
    assert REFUSAL_SENTENCES["ja"] not in japanese[1]["content"]
    english, _ = build_messages("When are old logs deleted?", [passage], fence="a" * 16)
    assert english[0]["content"] == japanese[0]["content"]
    english_rules = english[1]["content"].rsplit("<<<END QUESTION", 1)[1]
    assert "Japanese" not in english_rules and english_rules.rstrip().endswith(REFUSAL_SENTENCE)
    assert is_refusal(REFUSAL_SENTENCES["ja"]) and is_refusal("索引にある文書からはお答えできません")
    assert is_refusal(REFUSAL_SENTENCE) and not is_refusal("古いログは 30 日後に削除されます [1]。")
