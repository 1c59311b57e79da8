from __future__ import annotations

from pathlib import Path

import pytest

from citedocs.errors import InputError, NotFoundError
from citedocs.sites.rank import MAX_K, SiteIndex, tokenize
from citedocs.sources.llmstxt import DocLink, parse_llms_txt
from conftest import shared


def _link(title: str, path: str, description: str = "", section: str = "") -> DocLink:
    return DocLink(title, f"https://x.dev/{path}", description, section)


def _index(**sources: list[DocLink]) -> SiteIndex:
    index = SiteIndex()
    for name, links in sources.items():
        index.add_source(name, links)
    return index


@pytest.fixture(scope="module")
def real_index() -> SiteIndex:
    index = SiteIndex()
    for path in sorted(Path(shared("llms-txt")).glob("*.txt")):
        host, _, rest = path.name.partition("__")
        parsed = parse_llms_txt(path.read_text(encoding="utf-8"), f"https://{host}/{rest}")
        index.add_source(path.name.removesuffix(".txt"), parsed.links)
    return index


def test_tokenize_stems_and_drops_stop_words() -> None:
    assert tokenize("The running of tests") == ["run", "running", "test", "tests"]
    assert tokenize("run") == ["run"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("useState", ["usestate", "use", "state"]),
        ("snake_case", ["snake_case", "snake", "case"]),
        ("v2.3", ["v2.3", "v2", "3"]),
        ("--flag", ["--flag", "flag"]),
        ("@hono/zod", ["@hono/zod", "hono", "zod"]),
        ("HTTPServer", ["httpserver", "http", "server"]),
        (
            "upgradeWebSocket",
            ["upgradewebsocket", "upgrad", "upgrade", "web", "socket", "upgradeweb", "websocket"],
        ),
        ("pydantic_ai.agent", ["pydantic_ai.agent", "pydant", "pydantic", "ai", "agent"]),
    ],
)
def test_tokenize_keeps_technical_terms_whole_and_in_parts(text: str, expected: list[str]) -> None:
    assert tokenize(text) == expected


@pytest.mark.parametrize("text", ["", "   ", "?!.,;:()[]{}", "— … ---", "the of and"])
def test_tokenize_of_nothing_searchable_is_empty(text: str) -> None:
    assert tokenize(text) == []


def test_stemming_matches_word_forms_both_ways() -> None:
    index = _index(
        s=[_link("Run tests", "run"), _link("Running in parallel", "parallel"), _link("Other", "o")]
    )
    assert {hit.title for hit in index.search("running")} == {"Run tests", "Running in parallel"}
    assert index.search("running")[0].title == "Running in parallel"  # the exact form counts too
    assert {hit.title for hit in index.search("runs")} == {"Run tests", "Running in parallel"}


def test_technical_term_matches_exactly_not_just_a_part() -> None:
    index = _index(
        s=[_link("use", "use"), _link("useEffect", "use-effect"), _link("Side effects", "effects")]
    )
    hits = index.search("useEffect")
    assert hits[0].title == "useEffect"
    assert hits[0].score > 2 * max(hit.score for hit in hits[1:])
    assert index.search("useeffect")[0].title == "useEffect"


def test_title_outweighs_description() -> None:
    index = _index(
        s=[
            _link("Overview", "a", "Everything about caching and more."),
            _link("Caching", "b", "Everything about storage and more."),
        ]
    )
    assert [hit.title for hit in index.search("caching")] == ["Caching", "Overview"]


def test_title_outweighs_section() -> None:
    index = _index(s=[_link("Button", "a", section="Forms"), _link("Forms", "b", section="Guides")])
    assert [hit.title for hit in index.search("forms")] == ["Forms", "Button"]


def test_bigram_boosts_the_phrase() -> None:
    index = _index(
        s=[
            _link("Caching overview for prompt templates", "a"),
            _link("Prompt caching overview for templates", "b"),
        ]
    )
    first, second = index.search("prompt caching")
    assert first.title == "Prompt caching overview for templates" and first.score > second.score


def test_source_filter_and_unknown_source() -> None:
    index = _index(a=[_link("Routing", "a/routing")], b=[_link("Routing basics", "b/routing")])
    assert {hit.source for hit in index.search("routing")} == {"a", "b"}
    assert [hit.source for hit in index.search("routing", source="b")] == ["b"]
    with pytest.raises(NotFoundError, match="list_doc_sources"):
        index.search("routing", source="c")


def test_scores_are_in_unit_range_and_comparable_across_sources() -> None:
    index = _index(
        strong=[_link("Prompt caching", "prompt-caching", "How prompt caching works."), _link("Other", "o")],
        weak=[_link("Pricing", "pricing", "Costs, including a note on caching."), _link("More", "m")],
    )
    hits = index.search("prompt caching")
    assert [hit.source for hit in hits] == ["strong", "weak"]
    assert all(0.0 <= hit.score <= 1.0 for hit in hits)
    assert hits[0].score > 0.6 > 0.3 > hits[1].score  # a weak source's best hit does not become 1.0
    assert index.search("prompt caching", source="weak")[0].score == hits[1].score


def test_empty_and_punctuation_queries_return_nothing() -> None:
    index = _index(s=[_link("Routing", "routing")])
    for query in ["", "   ", "?!", "the and of", "***"]:
        assert index.search(query) == []
    assert SiteIndex().search("routing") == []


def test_k_default_cap_and_bounds() -> None:
    index = _index(s=[_link(f"Guide {n}", f"g{n}") for n in range(60)])
    assert len(index.search("guide")) == 5
    assert len(index.search("guide", k=MAX_K)) == 50
    for bad in (0, -1, 51):
        with pytest.raises(InputError, match="at most 50"):
            index.search("guide", k=bad)


def test_add_source_replaces_and_remove_source_forgets() -> None:
    index = _index(s=[_link("Old page", "old")])
    index.add_source("s", [_link("New page", "new"), _link("New page", "new")])
    assert [hit.title for hit in index.search("page")] == ["New page"]
    index.remove_source("s")
    index.remove_source("never-added")
    assert index.search("page") == [] and index.sources() == []
    with pytest.raises(InputError):
        index.add_source(" ", [])


def test_page_text_counts_below_title_and_feeds_the_snippet() -> None:
    index = _index(
        s=[_link("Streaming", "streaming", "Send chunks."), _link("Helpers", "helpers", "Utilities.")]
    )
    assert [hit.title for hit in index.search("websocket upgrade")] == []
    index.add_page_text(
        "s", "https://x.dev/helpers", "Intro.\n\nThe upgradeWebSocket helper handles upgrades."
    )
    (hit,) = index.search("websocket upgrade")
    assert hit.title == "Helpers" and index.search("websocket")[0].title == "Helpers"
    assert hit.snippet == "The **upgradeWebSocket** helper handles **upgrades**."
    assert [h.title for h in index.search("streaming")] == ["Streaming"]
    index.add_page_text("s", "https://x.dev/helpers", "Replaced text about cookies.")
    assert index.search("websocket upgrade") == []
    with pytest.raises(NotFoundError):
        index.add_page_text("s", "https://x.dev/missing", "text")


def test_page_text_ranks_below_a_title_match() -> None:
    index = _index(s=[_link("Cookies", "cookies"), _link("Context", "context")])
    index.add_page_text("s", "https://x.dev/context", "Cookies. " * 20 + "Read cookies from the context.")
    assert [hit.title for hit in index.search("cookies")] == ["Cookies", "Context"]


def test_snippet_marks_terms_in_the_best_description_fragment() -> None:
    index = _index(
        s=[_link("Forms", "forms", "Build layouts. Validate forms with Zod schemas. Style them.")],
    )
    (hit,) = index.search("form validation")
    assert hit.snippet == "**Validate** **forms** with Zod schemas."
    assert _index(s=[_link("Forms", "f")]).search("forms")[0].snippet == ""


def test_long_page_snippet_is_a_window_around_the_match() -> None:
    index = _index(s=[_link("Page", "p")])
    index.add_page_text(
        "s", "https://x.dev/p", "filler words here " * 40 + "the needle is here " + "tail " * 80
    )
    snippet = index.search("needle")[0].snippet
    assert "**needle**" in snippet and len(snippet) < 300


def test_real_files_routing_in_hono(real_index: SiteIndex) -> None:
    hits = real_index.search("routing", source="hono.dev__llms")
    assert hits[0].url == "https://hono.dev/docs/api/routing"
    assert {hit.title for hit in hits} == {"Routing", "Route"}


@pytest.mark.parametrize(
    ("query", "url"),
    [
        ("mock timers", "https://vitest.dev/guide/mocking/timers.md"),
        ("date picker", "https://ui.shadcn.com/docs/components/date-picker"),
        ("openai model", "https://ai.pydantic.dev/models/openai/index.md"),
        ("pydantic_ai.agent", "https://ai.pydantic.dev/api/agent/index.md"),
        ("coverage", "https://vitest.dev/config/coverage.md"),
        ("dark mode", "https://ui.shadcn.com/docs/dark-mode"),
    ],
)
def test_real_files_best_hit_across_all_sources(real_index: SiteIndex, query: str, url: str) -> None:
    hits = real_index.search(query)
    assert hits[0].url == url
    assert all(0.0 <= hit.score <= 1.0 for hit in hits)
    assert hits == sorted(hits, key=lambda hit: -hit.score)


JA_LLMS_TXT = """# Debian 開発者レファレンス

> Debian の開発者向けの手引きです。

## パッケージ

- [重要度](https://x.dev/severity.html)
- [新規パッケージ](https://x.dev/new.html): ITP バグを出してからアップロードします。
- [開発者責任](https://x.dev/duties.html)
- [翻訳](https://x.dev/l10n.html): 翻訳者との作業
"""


def test_kanji_only_titles_of_a_japanese_site_are_japanese_words() -> None:
    """A Japanese question (kana: analysed as Japanese words only) finds a title of kanji only (issue 47)."""
    links = parse_llms_txt(JA_LLMS_TXT, "https://x.dev/llms.txt").links
    index = _index(ja=links)
    assert index.search("バグの重要度について")[0].url == "https://x.dev/severity.html"
    assert index.search("重要度")[0].url == "https://x.dev/severity.html"  # kanji only: asked both ways
    assert index.search("開発者の責任とは")[0].url == "https://x.dev/duties.html"
    zh = _index(zh=[_link("日志轮转", "log"), _link("数据库", "db")])  # no kana: Chinese bigrams, as before
    assert zh.search("日志")[0].url == "https://x.dev/log"


def test_a_japanese_sites_link_documents_hold_the_words_a_japanese_query_asks_for() -> None:
    """The main index's stand-ins for unfetched pages: their title terms meet the Japanese query's terms."""
    from citedocs.sites.links import link_document
    from citedocs.sites.rank import site_is_japanese
    from citedocs.text.analyzer import query_terms

    links = parse_llms_txt(JA_LLMS_TXT, "https://x.dev/llms.txt").links
    assert site_is_japanese(links)
    severity = next(link for link in links if link.title == "重要度")
    _, chunk = link_document(severity, site_is_japanese(links))
    assert set(query_terms("バグの重要度について")) & set(chunk.heading_terms.split()) == {"重要度"}
    _, alone = link_document(DocLink("重要度", "https://x.dev/s"))  # by itself, kanji only reads as Chinese
    assert alone.heading_terms.split()[:2] == ["重要", "要度"]
    assert link_document(severity, True)[0].sha256 != link_document(severity, False)[0].sha256
