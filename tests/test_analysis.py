from __future__ import annotations

from citedocs.text.analyzer import fts_match, query_terms, terms


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
