from __future__ import annotations

import json
import re

from citedocs.text.analyzer import RAW_TOKEN, _analyse_token, _tokens, fts_match, query_terms, terms
from citedocs.text.cjk import has_cjk
from conftest import shared


def test_prose_is_stemmed() -> None:
    assert terms("Running runs") == ["run", "run"]


def test_identifiers_are_kept_whole_and_split() -> None:
    t = terms("snake_case useState --dry-run v2.3")
    for expected in ["snake", "case", "snake_case", "use", "state", "usestate", "--dry-run", "v2.3"]:
        assert expected in t


def test_query_terms_drop_stopwords_unless_nothing_is_left() -> None:
    assert query_terms("What is the default port?") == ["default", "port"]
    assert query_terms("what is it") == ["what", "is", "it"]


def test_fts_match_quotes_every_term() -> None:
    assert fts_match(['a"b', "c"]) == '"a""b" OR "c"'
    assert query_terms('"); DROP TABLE x; -- NEAR(') == ["drop", "tabl", "x", "near"]


def _real_texts() -> list[str]:
    """SciFact abstracts, Claude docs paragraphs and the Japanese manual's pages (as stored: markup and all)."""
    lines = (shared("scifact") / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[:1500]
    texts = [json.loads(line)["text"] for line in lines]
    for page in sorted((shared("claude-docs-qa") / "docs").glob("*.md"))[:20]:
        texts.extend(p for p in page.read_text(encoding="utf-8").split("\n\n") if p.strip())
    for page in sorted((shared("ja-developers-reference") / "docs").glob("*.html"))[:3]:
        texts.extend(page.read_text(encoding="utf-8").split("\n\n")[:200])
    return texts


def test_index_terms_are_the_token_by_token_analysis_on_real_corpora() -> None:
    """`terms` skips the per-token loop for text without CJK runs: the same terms, in the same order."""
    texts = _real_texts()
    for text in texts:
        expected: list[str] = []
        for raw, cjk, _ in _tokens(text):
            expected.extend([raw] if cjk else _analyse_token(raw))
        assert terms(text) == expected, text
    assert sum(has_cjk(t) for t in texts) > 10  # the CJK way is compared too


def test_the_possessive_raw_token_pattern_finds_what_the_backtracking_one_found() -> None:
    backtracking = re.compile(r"-{0,2}\w+(?:[._\-/:@]\w+)*")
    for text in [*_real_texts(), "---x a__b a._b -- -a- x@y.z:1/2 a_ snake_case --dry-run v2.3"]:
        assert RAW_TOKEN.findall(text) == backtracking.findall(text), text
