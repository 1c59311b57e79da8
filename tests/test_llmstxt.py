from __future__ import annotations

import re
import time

import pytest

from citedocs.sources.llmstxt import DocLink, InlinePage, LlmsTxt, parse_llms_txt
from conftest import shared

BASE = "https://x.dev/docs/llms.txt"


def _parse_shared(name: str) -> tuple[str, LlmsTxt]:
    text = shared("llms-txt", name).read_text(encoding="utf-8")
    host, _, path = name.partition("__")
    return text, parse_llms_txt(text, f"https://{host}/{path.replace('__', '/')}")


def _regex_link_urls(text: str) -> set[str]:
    """An independent count: every `[...](...)` in the file, by distinct destination."""
    return set(re.findall(r"\[[^\]\n]*\]\(([^)\s]+)\)", text))


@pytest.mark.parametrize(
    ("name", "links", "optional"),
    [
        ("hono.dev__llms.txt", 87, 84),
        ("vitest.dev__llms.txt", 172, 0),
        ("ai.pydantic.dev__llms.txt", 128, 6),
        ("ui.shadcn.com__llms.txt", 97, 0),
        ("fastht.ml__llms.txt", 21, 14),
        ("llmstxt.org__llms.txt", 3, 0),
        ("llmstxt.org__llms-sample.txt", 5, 1),
    ],
)
def test_real_index_files_keep_every_link(name: str, links: int, optional: int) -> None:
    text, parsed = _parse_shared(name)
    assert len(parsed.links) == links == len(_regex_link_urls(text))
    assert sum(link.optional for link in parsed.links) == optional
    assert parsed.pages == []
    assert parsed.title and parsed.summary
    assert all(link.url.startswith("https://") and link.title for link in parsed.links)
    assert len({link.url for link in parsed.links}) == links


def test_real_ctx_file_inlines_seven_pages_with_their_urls() -> None:
    _, parsed = _parse_shared("fastht.ml__llms-ctx.txt")
    assert parsed.title == "FastHTML"
    assert "fastcore's `FT`" in parsed.summary
    assert parsed.details.startswith("Things to remember when writing FastHTML apps:")
    assert [p.section for p in parsed.pages] == ["docs"] * 3 + ["api"] * 2 + ["examples"] * 2
    assert len(parsed.links) == len(parsed.pages) == 7
    first = parsed.pages[0]
    assert first.title == "FastHTML concise guide"
    assert first.url == "https://www.fastht.ml/docs/ref/concise_guide.html.md"
    assert first.text.startswith("# Concise reference")
    assert parsed.links[0].description == "A brief overview of idiomatic FastHTML apps"
    assert parsed.pages[-1].text.rstrip().endswith("serve()")


def test_real_files_sections_and_descriptions() -> None:
    _, shadcn = _parse_shared("ui.shadcn.com__llms.txt")
    form = next(link for link in shadcn.links if link.title == "Form")
    assert form.section == "Components > Form & Input"
    assert form.description == "Building forms with React Hook Form and Zod validation."
    _, vitest = _parse_shared("vitest.dev__llms.txt")
    assert vitest.links[0] == DocLink(
        "Configuring Vitest", "https://vitest.dev/config.md", "", "Table of Contents > Config Reference"
    )
    _, hono = _parse_shared("hono.dev__llms.txt")
    assert hono.links[0].description == "Full documentation of Hono. (without examples)"  # no ":" in the file
    _, pydantic = _parse_shared("ai.pydantic.dev__llms.txt")
    assert any(link.title == "Image, Audio, Video & Document Input" for link in pydantic.links)


def test_spec_form() -> None:
    parsed = parse_llms_txt(
        "# Proj\n\n> Short summary.\n\nSome details.\n\n- a note\n\n## Docs\n\n"
        "- [Quick start](https://x.dev/qs.md): How to start\n",
        BASE,
    )
    assert (parsed.title, parsed.summary) == ("Proj", "Short summary.")
    assert parsed.details == "Some details.\n\n- a note"
    assert parsed.links == [DocLink("Quick start", "https://x.dev/qs.md", "How to start", "Docs", False)]
    assert not parsed.is_empty


def test_multi_line_summary_and_missing_summary() -> None:
    assert parse_llms_txt("# P\n> one\n> two\n\n## S\n- [a](a)").summary == "one two"
    parsed = parse_llms_txt("# P\n\n## S\n\n- [a](https://x.dev/a)")
    assert parsed.summary == "" and len(parsed.links) == 1


def test_continuation_lines_join_the_description() -> None:
    parsed = parse_llms_txt(
        "## S\n- [A](a.md): starts here\n  continues indented\nand lazily\n\n"
        "  after a blank, still indented\n- [B](b.md): b\n",
        BASE,
    )
    a, b = parsed.links
    assert a.description == "starts here continues indented and lazily after a blank, still indented"
    assert b.description == "b"


def test_prose_between_links_is_not_a_description() -> None:
    parsed = parse_llms_txt("## S\n- [A](a.md): a\n\nThese next ones are older.\n\n- [B](b.md)\n", BASE)
    assert [link.description for link in parsed.links] == ["a", ""]


def test_optional_section_and_its_subsections() -> None:
    parsed = parse_llms_txt("## Docs\n- [A](a)\n## Optional\n- [B](b)\n### More\n- [C](c)\n## API\n- [D](d)")
    assert [(link.title, link.optional) for link in parsed.links] == [
        ("A", False),
        ("B", True),
        ("C", True),
        ("D", False),
    ]
    assert parsed.links[2].section == "Optional > More"


def test_links_outside_lists() -> None:
    parsed = parse_llms_txt(
        "# P\nIntro with [a link](intro.md).\n## S\n[Bare](bare.md): described\nSee [Inline](in.md) here.\n",
        BASE,
    )
    assert [(link.title, link.section, link.description) for link in parsed.links] == [
        ("a link", "", "Intro with a link."),
        ("Bare", "S", "described See Inline here."),
        ("Inline", "S", "See Inline here."),
    ]


def test_links_in_headings() -> None:
    parsed = parse_llms_txt("# T\n## [Guides](guides.md)\n- [One](one.md)\n", BASE)
    assert [(link.title, link.section) for link in parsed.links] == [("Guides", ""), ("One", "Guides")]


def test_nested_lists() -> None:
    parsed = parse_llms_txt(
        "## S\n- [Parent](p.md): parent\n  - [Child](c.md): child\n    - grandchild note\n- [Next](n.md)\n",
        BASE,
    )
    assert [(link.title, link.description) for link in parsed.links] == [
        ("Parent", "parent"),
        ("Child", "child grandchild note"),
        ("Next", ""),
    ]


def test_relative_urls_resolve_against_the_file_url() -> None:
    text = "## S\n- [Abs](/config.md)\n- [Rel](guide/x.md)\n- [Up](../y.md)\n- [Frag](#top)"
    urls = [link.url for link in parse_llms_txt(text, "https://x.dev/docs/llms.txt").links]
    assert urls == [
        "https://x.dev/config.md",
        "https://x.dev/docs/guide/x.md",
        "https://x.dev/y.md",
        "https://x.dev/docs/llms.txt#top",
    ]
    assert parse_llms_txt(text).links[0].url == "/config.md"


def test_link_syntax_variants() -> None:
    parsed = parse_llms_txt(
        "## S\n"
        "- [Angle](<path with space.md>): a\n"
        "- [Array[int] and `list[str]`](types.md) - typed\n"
        "- [Paren](https://x.dev/a_(b)) — wiki style\n"
        '- [Titled](t.md "a tooltip"): t\n'
        "- [Fish &amp; Chips](f.md)\n"
        "- [Ref][r]\n"
        "- [![badge](b.svg)](badge.md)\n"
        "- ![just an image](i.png)\n"
        "- [Mail](mailto:me@x.dev) and [Script](javascript:alert(1))\n"
        "- `[code](not-a-link.md)`\n"
        "```\n- [Fenced](fenced.md)\n```\n"
        "[r]: https://x.dev/ref.md\n",
        BASE,
    )
    assert [(link.title, link.url, link.description) for link in parsed.links] == [
        ("Angle", "https://x.dev/docs/path%20with%20space.md", "a"),
        ("Array[int] and list[str]", "https://x.dev/docs/types.md", "typed"),
        ("Paren", "https://x.dev/a_(b)", "wiki style"),
        ("Titled", "https://x.dev/docs/t.md", "t"),
        ("Fish & Chips", "https://x.dev/docs/f.md", ""),
        ("Ref", "https://x.dev/ref.md", ""),
        ("badge", "https://x.dev/docs/badge.md", ""),
    ]


def test_duplicates_keep_the_first_and_fill_its_description() -> None:
    parsed = parse_llms_txt(
        "## A\n- [One](1.md)\n## B\n- [One again](1.md): later words\n- [Two](2.md)", BASE
    )
    assert [(link.title, link.section, link.description) for link in parsed.links] == [
        ("One", "A", "later words"),
        ("Two", "B", ""),
    ]


def test_crlf_bom_and_numbered_lists() -> None:
    parsed = parse_llms_txt("\ufeff# T\r\n\r\n## S\r\n1. [A](a.md): one\r\n2) [B](b.md)\r\n", BASE)
    assert parsed.title == "T"
    assert [(link.title, link.description) for link in parsed.links] == [("A", "one"), ("B", "")]


def test_ctx_form_with_sections_and_preamble_urls() -> None:
    text = (
        "{'title': 'B', 'url': 'https://x.dev/b.md', 'desc': 'Bd'}\n"
        "<project title=\"X\" summary='Sum &amp; more'>Details here\n"
        '<docs><doc title="A" desc="Ad" url="/a.md">Text A</doc></docs>'
        '<optional><doc title="B" desc="Bd">Text B <div class="x">html</div></doc>'
        '<doc title="C">No url anywhere</doc></optional></project>'
    )
    parsed = parse_llms_txt(text, BASE)
    assert (parsed.title, parsed.summary, parsed.details) == ("X", "Sum & more", "Details here")
    assert parsed.pages == [
        InlinePage("A", "https://x.dev/a.md", "docs", "Text A"),
        InlinePage("B", "https://x.dev/b.md", "optional", 'Text B <div class="x">html</div>'),
        InlinePage("C", None, "optional", "No url anywhere"),
    ]
    assert parsed.links == [
        DocLink("A", "https://x.dev/a.md", "Ad", "docs", False),
        DocLink("B", "https://x.dev/b.md", "Bd", "optional", True),
    ]


def test_full_form_with_source_lines() -> None:
    text = (
        "# Page One\nSource: https://x.dev/one\n\nBody one [link](https://x.dev/other).\n\n"
        "```md\n# not a page\n```\n\n# Page Two\nSource: https://x.dev/two\n\nBody two\n"
    )
    parsed = parse_llms_txt(text, BASE)
    assert [(p.title, p.url) for p in parsed.pages] == [
        ("Page One", "https://x.dev/one"),
        ("Page Two", "https://x.dev/two"),
    ]
    assert parsed.pages[0].text.endswith("# not a page\n```")
    assert [link.url for link in parsed.links] == ["https://x.dev/one", "https://x.dev/two"]


def test_full_form_with_front_matter() -> None:
    text = (
        "---\nurl: /guide/one.md\ndescription: First\n---\n# One\n\nText one.\n\n"
        "---\nurl: /guide/two.md\n---\n# Two\n\nText two.\n"
    )
    parsed = parse_llms_txt(text, "https://x.dev/llms-full.txt")
    assert parsed.pages == [
        InlinePage("One", "https://x.dev/guide/one.md", "", "Text one."),
        InlinePage("Two", "https://x.dev/guide/two.md", "", "Text two."),
    ]
    assert parsed.links[0].description == "First"


def test_full_form_without_urls_keeps_pages() -> None:
    text = "# Hono\n\n> Ultrafast.\n\nA framework.\n\n# Routing\n\nRouting prose.\n\n# Middleware\n\nMore."
    parsed = parse_llms_txt(text)
    assert (parsed.title, parsed.summary) == ("Hono", "Ultrafast.")
    assert [p.title for p in parsed.pages] == ["Hono", "Routing", "Middleware"]
    assert parsed.links == [] and not parsed.is_empty


@pytest.mark.parametrize(
    "text", ["", "   \n", "<html><body>404 Not Found</body></html>", "# Only a title\n\n> and a summary\n"]
)
def test_nothing_to_index_is_empty(text: str) -> None:
    assert parse_llms_txt(text).is_empty


def test_doc_tags_in_an_index_example_do_not_make_it_a_ctx_file() -> None:
    text = '# X\n\n> s\n\n## Docs\n\n- [A](a.md): the ctx format\n\n```xml\n<doc title="x">y</doc>\n```\n'
    parsed = parse_llms_txt(text, BASE)
    assert [link.title for link in parsed.links] == ["A"] and parsed.pages == []


def test_ctx_without_project_and_with_double_quoted_preamble() -> None:
    text = (
        "{'title': \"It's here\", 'url': 'https://x.dev/h.md', 'desc': ''}\n"
        '<docs><doc title="It\'s here">T</doc></docs>'
    )
    parsed = parse_llms_txt(text)
    assert parsed.pages == [InlinePage("It's here", "https://x.dev/h.md", "docs", "T")]


@pytest.mark.parametrize(
    "text",
    [
        "## S\n- " + "[" * 50_000,
        "## S\n- " + "![" * 50_000,
        "## S\n- " + "".join("`" * (n % 40 + 1) + "x" for n in range(5_000)),
        "# a" + " " * 50_000 + "x\n## b" + " \t" * 50_000 + "#",
        "</doc><project>" + "<doc a" * 20_000,
        '<project><doc title="' + "a" * 50_000 + ">x</doc>",
        "<project><doc " + "a" * 50_000 + ">x</doc>",
        "## S\n- [a](" + "(" * 50_000,
        "## S\n- [bad host](http://[::1/x)\n- [ok](ok.md)",
    ],
    ids=[
        "brackets",
        "images",
        "backticks",
        "heading-space",
        "doc-opens",
        "open-quote",
        "attr",
        "parens",
        "ipv6",
    ],
)
def test_hostile_input_parses_quickly_without_raising(text: str) -> None:
    start = time.perf_counter()
    parse_llms_txt(text, BASE)
    assert time.perf_counter() - start < 2.0
