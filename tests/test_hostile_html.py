"""HTML nested far deeper than any real page (the C parser's time grows with the square of the depth: 200k
nested <div>, 2.2 MB, held the indexer for over 9 minutes) is refused before it is parsed, in a folder being
indexed and in a site page read through GET /read."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from citedocs.api import create_app
from citedocs.errors import ParseError
from citedocs.parsers.html import MAX_HTML_DEPTH, html_to_markdown, nesting_depth, parse_html
from citedocs.service import Citedocs
from citedocs.settings import Settings
from fakes.docs_site import serve_docs
from fakes.live_server import live_server

BOUND_S = 10.0  # the unguarded parse took 9+ minutes (200k) and 16 s (60k) on this machine


def nested(depth: int, tag: str = "div") -> str:
    return f"<html><body><h1>Deep</h1>{f'<{tag}>' * depth}x{f'</{tag}>' * depth}</body></html>"


def test_depth_is_counted_from_the_tags_a_parser_would_nest() -> None:
    assert nesting_depth(nested(50)) == 50
    page = "<div><p>a<p>b<ul><li>c<li>d</ul><br/><img src=x><!-- <div><div> --><script>'<div>'</script></div>"
    assert nesting_depth(page) == 2
    assert nesting_depth("<span>" * 5000) == MAX_HTML_DEPTH + 1  # unclosed inline elements nest too
    assert html_to_markdown(nested(300)).startswith("# Deep")  # deep but real-sized pages still read


@pytest.mark.parametrize("tag", ["div", "span", "a", "table"])
def test_a_page_nested_200k_deep_is_refused_at_once(tag: str) -> None:
    started = time.monotonic()
    with pytest.raises(ParseError, match="nested more than"):
        parse_html(nested(200_000, tag).encode(), "deep.html")
    assert time.monotonic() - started < BOUND_S


def test_indexing_a_folder_with_a_deep_page_goes_on(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "deep.html").write_text(nested(200_000), encoding="utf-8")
    (docs / "good.md").write_text("# Good\n\nThe heron wades.\n", encoding="utf-8")
    library = Citedocs(Settings(db=str(tmp_path / "index.sqlite3"), embedder="none"))
    try:
        library.add_folder(docs)
        started = time.monotonic()
        (report,) = library.index()
        assert time.monotonic() - started < BOUND_S
        assert report.indexed == 1 and report.failed == 1
        assert any("nested more than" in why for _, why in report.failures)
    finally:
        library.close()


def test_read_of_a_deep_site_page_answers_with_a_json_error_at_once(tmp_path: Path) -> None:
    settings = Settings(
        db=str(tmp_path / "index.sqlite3"), embedder="none", allowed_private_hosts=["127.0.0.1"]
    )
    library = Citedocs(settings)
    with serve_docs(tmp_path / "www") as site:
        site.write("docs/llms.txt", f"# Deep\n\n- [Deep]({site.url}/docs/deep.html): deep\n")
        site.write("docs/deep.html", nested(60_000))
        library.sites.add("deep", f"{site.url}/docs/llms.txt")
        with live_server(create_app(settings, library)) as url:
            started = time.monotonic()
            reply = httpx.get(f"{url}/read", params={"path": f"{site.url}/docs/deep.html"}, timeout=60)
            assert time.monotonic() - started < BOUND_S
    library.close()
    assert reply.status_code == 422, reply.text
    assert "nested more than" in reply.json()["error"]["message"]
