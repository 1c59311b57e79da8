"""Snippets: the window with the most distinct query terms, each match marked, whichever way it was found."""

from __future__ import annotations

from citedocs.search.snippets import make_snippet
from citedocs.text.analyzer import query_terms


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
