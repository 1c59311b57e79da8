"""Snippets: the window with the most distinct query terms, each match marked, whichever way it was found."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from citedocs.search.snippets import _candidates, _findable, _spans, make_snippet
from citedocs.text.analyzer import query_terms
from citedocs.text.cjk import has_cjk
from conftest import shared


def test_words_that_analyse_to_a_query_term_are_marked_and_words_merely_containing_it_are_not() -> None:
    text = "Proteins and aprotinin; PROTEIN-rich diets (protein_kinase) were studied in 2019."
    assert make_snippet(text, query_terms("protein 2019")) == (
        "**Proteins** and aprotinin; **PROTEIN**-rich diets (protein_kinase) were studied in **2019**."
    )


def test_identifiers_and_non_ascii_text_are_matched_as_before() -> None:
    text = "Set max_tokens in config.toml, then résumé the Café run: café opens at 8080."
    assert make_snippet(text, query_terms("config.toml max_tokens")) == (
        "Set **max_tokens** in **config.toml**, then résumé the Café run: café opens at 8080."
    )
    assert make_snippet(text, query_terms("cafe café 8080")) == (
        "Set max_tokens in config.toml, then résumé the **Café** run: **café** opens at **8080**."
    )


def test_the_window_starts_near_the_best_run_of_matches() -> None:
    text = "filler " * 100 + "vitamin D deficiency and vitamin D supplements " + "filler " * 100
    snippet = make_snippet(text, query_terms("vitamin deficiency supplements"), width=120)
    assert snippet.startswith("…") and snippet.endswith("…")
    assert "**vitamin** D **deficiency** and **vitamin** D **supplements**" in snippet


# Sentences of the real Japanese manual (../shared/data/ja-developers-reference/docs/pkgs.html, resources.html).
JA_SEVERITY = (
    "時々、重要度の定義に合うようにバグの重要度を調整する必要もあります。これは、人々はバグ修正を確実に早くして"
    "もらうために重要度を極端に上げようとするからです。"
)
JA_MAINTENANCE = (
    "共同メンテナンス (collaborative maintenance) は、Debian パッケージのメンテナンス責任を数人でシェアする"
    "ことを指す用語です。"
)


def test_japanese_query_words_are_marked_in_japanese_text() -> None:
    assert make_snippet(JA_SEVERITY, query_terms("重要度")) == (
        "時々、**重要度**の定義に合うようにバグの**重要度**を調整する必要もあります。これは、人々はバグ修正を確実に"
        "早くしてもらうために**重要度**を極端に上げようとするからです。"
    )
    assert make_snippet(JA_MAINTENANCE, query_terms("メンテナンス")) == (
        "共同**メンテナンス** (collaborative maintenance) は、Debian パッケージの**メンテナンス**責任を数人で"
        "シェアすることを指す用語です。"
    )


def test_a_japanese_question_marks_its_nouns_not_its_grammar_or_its_verbs() -> None:
    snippet = make_snippet(JA_SEVERITY, query_terms("バグの重要度を調整するには？"))
    assert "**バグ**の**重要度**を**調整**する" in snippet
    assert set(re.findall(r"\*\*(.+?)\*\*", snippet)) == {"バグ", "重要度", "調整"}


def test_latin_and_japanese_terms_of_one_query_are_both_marked() -> None:
    assert make_snippet(JA_MAINTENANCE, query_terms("Debian のメンテナンス")).startswith(
        "共同**メンテナンス** (collaborative maintenance) は、**Debian** パッケージの**メンテナンス**責任"
    )


def test_chinese_bigrams_mark_the_word_once_and_half_width_kana_is_marked_as_written() -> None:
    assert (
        make_snippet("数据库的日志每天轮转一次。", query_terms("日志轮转"))
        == "数据库的**日志**每天**轮转**一次。"
    )
    assert make_snippet("ｶﾞｲﾄﾞの重要度", query_terms("ガイド")) == "**ｶﾞｲﾄﾞ**の重要度"


def test_the_window_moves_to_the_japanese_match() -> None:
    text = "前置きの文章です。" * 60 + JA_SEVERITY + "後書きの文章です。" * 60
    snippet = make_snippet(text, query_terms("重要度"), width=120)
    assert snippet.startswith("…") and snippet.endswith("…") and snippet.count("**重要度**") >= 2


def test_a_search_of_the_real_manual_marks_the_japanese_word_in_every_hit(tmp_path: Path) -> None:
    """The command a user runs: `citedocs search 重要度` over the Japanese manual, each hit's snippet marked."""
    env = {**os.environ, "CITEDOCS_DB": str(tmp_path / "index.db"), "CITEDOCS_EMBEDDER": "none"}

    def cli(*args: str) -> str:
        proc = subprocess.run(
            [sys.executable, "-m", "citedocs", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=180,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    cli("add", str(shared("ja-developers-reference") / "docs"))
    for word in ("重要度", "メンテナンス"):
        hits = json.loads(cli("search", word, "--mode", "keyword", "--json", "-k", "5"))["hits"]
        holding = [
            hit for hit in hits if word in hit["snippet"].replace("**", "")
        ]  # others: by their heading
        assert len(holding) >= 3 and all(f"**{word}**" in hit["snippet"] for hit in holding), hits


def _regex_spans(text: str, wanted: frozenset[str]) -> list[tuple[int, int]]:
    """The rule the matches follow: `_candidates`' alternation (what `_spans` used for every query before)."""
    folded = text.isascii() and all(t == t.lower() for t in wanted)
    return [m.span() for m in _candidates(wanted, folded).finditer(text.lower() if folded else text)]


def test_matches_found_with_str_find_are_the_regex_alternations_on_real_corpora() -> None:
    """SciFact abstracts (Greek letters, dashes, IL-6 style identifiers) and the Claude docs (code, paths),
    asked with real queries and with identifiers taken from the texts themselves."""
    texts: list[str] = []
    for line in (shared("scifact") / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[:1500]:
        texts.append(json.loads(line)["text"])
    for page in sorted((shared("claude-docs-qa") / "docs").glob("*.md"))[:20]:
        texts.extend(p for p in page.read_text(encoding="utf-8").split("\n\n") if p.strip())
    texts += ["İstanbul ıs ſome Kelvin \u212a test", "stra-1 il-6.il-6x il-6 IL-6, co-v co.v"]
    lines = (shared("scifact") / "queries.jsonl").read_text(encoding="utf-8").splitlines()[:300]
    queries = [json.loads(line)["text"] for line in lines]
    identifiers = sorted({m.group().lower() for t in texts[:400] for m in re.finditer(r"\w+[-.]\w+", t)})
    checked = compared = 0
    for n, text in enumerate(texts):
        wanted = frozenset(
            t for t in query_terms(f"{queries[n % len(queries)]} {identifiers[n % len(identifiers)]}") if t
        )
        latin = frozenset(t for t in wanted if not has_cjk(t))
        if not latin:
            continue
        compared += 1
        checked += _findable(text, text.lower(), latin)
        assert _spans(text, latin, False) == _regex_spans(text, latin), (text, sorted(latin))
    assert compared > 1500 and checked > 0.9 * compared  # most go the str.find way, and all agree
