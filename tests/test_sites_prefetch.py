"""Fetching a site's pages ahead of questions (issue 18): `add-site --fetch`, resumable, polite, over MCP too.
The site is the real Claude docs of ../shared/data/claude-docs-qa on a loopback server."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client

from citedocs.mcp import build_server
from citedocs.service import Citedocs
from citedocs.settings import Settings
from citedocs.sites.prefetch import pages_to_fetch
from citedocs.sources.llmstxt import DocLink
from conftest import shared
from fakes.claude_site import write_claude_site
from fakes.docs_site import DocsSite, serve_docs
from test_sites_ask import cli_env


@pytest.fixture
def claude(tmp_path: Path) -> Iterator[tuple[DocsSite, str]]:
    data = shared("claude-docs-qa")
    with serve_docs(tmp_path / "www") as site:
        llms_txt, _ = write_claude_site(site, data)
        yield site, llms_txt


def _settings(tmp_path: Path, **extra: Any) -> Settings:
    return Settings(
        db=str(tmp_path / "index.db"), allowed_private_hosts=["127.0.0.1"], embedder="none", **extra
    )


def _page_requests(site: DocsSite) -> list[str]:
    return [r.path for r in site.requests if r.path.startswith("/en/")]


def test_add_site_fetch_n_then_refresh_fetch_all_resumes_and_a_rerun_fetches_nothing(
    tmp_path: Path, claude: tuple[DocsSite, str]
) -> None:
    site, llms_txt = claude
    env = cli_env(tmp_path)

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [sys.executable, "-m", "citedocs", *args], env=env, capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0, proc.stderr
        return proc

    assert "fetched 5 of 5 pages" in cli("add-site", "claude", llms_txt, "--fetch", "5").stdout
    assert len(set(_page_requests(site))) == 5
    assert "fetched 40 of 40 pages" in cli("refresh", "claude", "--fetch", "all").stdout
    site.clear()
    assert "fetched 0 of 0 pages" in cli("refresh", "claude", "--fetch", "all").stdout
    assert all(
        r.status == 304 for r in site.requests if r.path.startswith("/en/")
    )  # revalidated, not fetched
    app = Citedocs(_settings(tmp_path))
    try:
        assert app.store.counts()["links"] == 0 and app.sites.list()[0].pages_fetched == 45
        jobs = [j for j in app.status()["jobs"] if j["kind"] == "fetch"]
        assert [j["state"] for j in jobs[:3]] == ["done"] * 3 and jobs[2]["done"] == 5
    finally:
        app.close()
    bad = subprocess.run(
        [sys.executable, "-m", "citedocs", "refresh", "claude", "--fetch", "some"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "'all' or a number" in bad.stderr


def test_a_stopped_prefetch_resumes_where_it_stopped(tmp_path: Path, claude: tuple[DocsSite, str]) -> None:
    site, llms_txt = claude
    app = Citedocs(_settings(tmp_path))
    try:
        app.sites.add("claude", llms_txt)
        seen: list[int] = []

        def stop_after_three() -> bool:
            return len(seen) >= 3

        state = app.sites.prefetch(
            "claude", progress=lambda s: seen.append(s.done), should_stop=stop_after_three
        )
        assert state.stopped and 3 <= state.done < 45
        job = next(j for j in app.status()["jobs"] if j["kind"] == "fetch")
        assert job["state"] == "interrupted"
        first = set(_page_requests(site))
        site.clear()
        rest = app.sites.prefetch("claude")
        assert not rest.stopped and rest.done == 45 - state.done
        assert not set(_page_requests(site)) & first  # nothing fetched twice
    finally:
        app.close()


def test_robots_txt_disallow_and_crawl_delay_are_honoured(
    tmp_path: Path, claude: tuple[DocsSite, str]
) -> None:
    site, llms_txt = claude
    site.write("robots.txt", "User-agent: *\nDisallow: /en/api/\nCrawl-delay: 0.3\n")
    app = Citedocs(_settings(tmp_path, site_fetch_concurrency=8))
    try:
        app.sites.add("claude", llms_txt)
        site.clear()
        started = time.monotonic()
        state = app.sites.prefetch("claude", 4)
        elapsed = time.monotonic() - started
        fetched = _page_requests(site)
        assert all(not p.startswith("/en/api/") for p in fetched)
        assert state.skipped > 0 and state.done == len(fetched) and state.delay_s == 0.3
        assert elapsed >= 0.3 * (len(fetched) - 1)  # one at a time, 0.3 s apart
    finally:
        app.close()


def test_pages_to_fetch_skips_stored_pages_and_fetches_a_page_once_for_its_fragments() -> None:
    links = [
        DocLink("A", "https://d/a"),
        DocLink("A2", "https://d/a#x"),
        DocLink("B", "https://d/b#y"),
        DocLink("C", "https://d/c"),
    ]
    assert pages_to_fetch(links, {"https://d/c"}, None) == ["https://d/a", "https://d/b"]
    assert pages_to_fetch(links, set(), 1) == ["https://d/a"]


async def fetch_jobs_done(client: Client) -> list[dict[str, Any]]:
    """The fetch jobs `index_status` lists, once the first is done (or after 20 s: the caller's assert says so)."""
    jobs: list[dict[str, Any]] = []
    for _ in range(400):
        status = (await client.call_tool("index_status", {})).structured_content
        jobs = [j for j in status["indexing"]["jobs"] if j["kind"] == "fetch"]
        if jobs and jobs[0]["state"] == "done":
            break
        await anyio.sleep(0.05)
    return jobs


def test_mcp_add_doc_source_can_prefetch_in_the_background(
    tmp_path: Path, claude: tuple[DocsSite, str]
) -> None:
    _, llms_txt = claude
    app = Citedocs(_settings(tmp_path))

    async def main() -> None:
        async with Client(build_server(app)) as client:
            result = await client.call_tool(
                "add_doc_source", {"name": "claude", "llms_txt_url": llms_txt, "fetch_pages": 6}
            )
            assert not result.is_error and "background" in result.structured_content["prefetch"]
            jobs = await fetch_jobs_done(client)
            assert jobs and jobs[0]["state"] == "done" and jobs[0]["done"] == 6, jobs
            hits = await client.call_tool("search", {"query": "ticket routing evaluation", "mode": "keyword"})
            assert not hits.is_error

    try:
        anyio.run(main)
        assert app.sites.list()[0].pages_fetched == 6
    finally:
        app.close()


def test_crawl_delay_reads_decimals_and_prefers_citedocs_own_group() -> None:
    from citedocs.sites.prefetch import crawl_delay

    assert crawl_delay("User-agent: *\nCrawl-delay: 2.5 # be nice\n") == 2.5
    assert crawl_delay("User-agent: *\nCrawl-delay: 5\n\nUser-agent: citedocs\nCrawl-delay: 1\n") == 1.0
    assert crawl_delay("User-agent: googlebot\nCrawl-delay: 9\n") == 0.0
    assert crawl_delay("User-agent: *\nCrawl-delay: soon\n") == 0.0
    assert crawl_delay("User-agent: a\nUser-agent: *\nDisallow: /x\nCrawl-delay: 3\n") == 3.0


def _small_site(site: DocsSite, pages: int) -> str:
    """An llms.txt of `pages` pages whose titles say nothing of what the pages hold."""
    links = []
    for i in range(pages):
        site.write(
            f"docs/p{i}.md", f"# Page {i}\n\nThe flux capacitor number {i} needs 1.21 gigawatts of zorblax.\n"
        )
        links.append(f"- [Page {i}]({site.url}/docs/p{i}.md): notes")
    return site.write("llms.txt", "# Tiny\n\n> A small site.\n\n## Docs\n\n" + "\n".join(links) + "\n")


def test_a_small_site_is_fetched_whole_after_add_politely_and_then_ranked_by_content(tmp_path: Path) -> None:
    from citedocs.sites.prefetch import AUTO_FETCH_INTERVAL_S

    with serve_docs(tmp_path / "www") as site:
        llms_txt = _small_site(site, 5)
        site.write("robots.txt", "User-agent: *\nDisallow: /docs/p4.md\n")
        app = Citedocs(_settings(tmp_path, site_fetch_concurrency=8))
        try:
            app.sites.add("tiny", llms_txt)
            before = app.search("zorblax gigawatts", k=5, mode="keyword").hits
            assert all(h.kind == "link" for h in before)  # titles only: nothing says zorblax
            site.clear()
            started = time.monotonic()
            thread, note = app.auto_prefetch("tiny")
            assert thread is not None and "background" in note
            thread.join(30)
            elapsed = time.monotonic() - started
            fetched = [r.path for r in site.requests if r.path.startswith("/docs/")]
            assert sorted(fetched) == [f"/docs/p{i}.md" for i in range(4)]  # robots.txt refused p4
            assert elapsed >= AUTO_FETCH_INTERVAL_S * 3  # one request at a time, spaced despite concurrency 8
            hits = app.search("zorblax gigawatts number 3", k=5, mode="keyword").hits
            assert hits[0].kind != "link" and hits[0].path.endswith("/docs/p3.md")
            # a second run fetches nothing: what is stored stays, and robots.txt still refuses p4
            site.clear()
            again = app.sites.prefetch("tiny")
            assert (again.total, again.skipped, again.done) == (1, 1, 0)
            assert [r.path for r in site.requests] == ["/robots.txt"]
        finally:
            app.close()


def test_a_large_site_is_not_fetched_after_add_and_says_what_is_not_fetched(tmp_path: Path) -> None:
    from citedocs.sites.prefetch import SMALL_SITE_PAGES

    with serve_docs(tmp_path / "www") as site:
        llms_txt = _small_site(site, SMALL_SITE_PAGES + 1)
        app = Citedocs(_settings(tmp_path))
        try:
            app.sites.add("big", llms_txt)
            site.clear()
            thread, note = app.auto_prefetch("big")
            assert thread is None and not site.requests
            assert (
                f"{SMALL_SITE_PAGES + 1} of {SMALL_SITE_PAGES + 1} pages of big are not fetched yet" in note
            )
            assert "refresh big --fetch all" in note
        finally:
            app.close()


def test_cli_add_site_fetches_a_small_site_and_none_leaves_it(tmp_path: Path) -> None:
    with serve_docs(tmp_path / "www") as site:
        llms_txt = _small_site(site, 3)
        env = cli_env(tmp_path)
        added = subprocess.run(
            [sys.executable, "-m", "citedocs", "add-site", "tiny", llms_txt],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert added.returncode == 0, added.stderr
        assert "fetched 3 of 3 pages" in added.stdout
        other = subprocess.run(
            [
                sys.executable,
                "-m",
                "citedocs",
                "add-site",
                "tiny2",
                f"{site.url}/llms.txt?x",
                "--fetch",
                "none",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert other.returncode == 0, other.stderr
        assert "3 of 3 pages of tiny2 are not fetched yet" in other.stdout


def test_mcp_add_doc_source_fetches_a_small_site_in_the_background_unasked(tmp_path: Path) -> None:
    with serve_docs(tmp_path / "www") as site:
        llms_txt = _small_site(site, 3)
        app = Citedocs(_settings(tmp_path))

        async def main() -> None:
            async with Client(build_server(app)) as client:
                result = await client.call_tool("add_doc_source", {"name": "tiny", "llms_txt_url": llms_txt})
                assert not result.is_error and "background" in result.structured_content["prefetch"]
                jobs = await fetch_jobs_done(client)
                assert jobs and jobs[0]["done"] == 3, jobs

        try:
            anyio.run(main)
            assert app.sites.list()[0].pages_fetched == 3
        finally:
            app.close()
