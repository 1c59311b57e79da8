from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from citedocs.errors import AccessDenied, FetchError, InputError, NotFoundError
from citedocs.service import Citedocs
from citedocs.settings import Settings
from citedocs.sites.model import DEFAULT_SITES, FAILURE_BACKOFF_S
from citedocs.sites.service import SiteService
from citedocs.store import SQLiteStore
from conftest import shared
from fakes.docs_site import DocsSite, serve_docs

LLMS_TXT = """# Tiny Docs

> A tiny documentation site for tests.

## Guides

- [Routing guide]({base}/docs/routing.md): How requests are matched to handlers with path parameters.
- [Middleware]({base}/docs/middleware.html): Compose JWT auth, CORS and logging middleware.
- [Deploy](deploy.md): Ship the app to Cloudflare workers.
"""
ROUTING = """# Routing

Routes match a method and a path. The quokka router walks a radix tree.

## Parameters

Use `:id` to capture a path segment.
"""
MIDDLEWARE = """<!doctype html><html><head><title>Middleware</title><script>var tracking = 1;</script></head>
<body><nav><a href="/">Home</a> | <a href="/docs">Docs</a></nav>
<main><h1>Middleware</h1><p>A wombat middleware runs before every handler.</p>
<pre><code>app.use(wombat())</code></pre></main><footer>Copyright nobody</footer></body></html>
"""


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def site(tmp_path: Path) -> Iterator[DocsSite]:
    with serve_docs(tmp_path / "www") as docs:
        docs.write("docs/llms.txt", LLMS_TXT.format(base=docs.url))
        docs.write("docs/routing.md", ROUTING)
        docs.write("docs/middleware.html", MIDDLEWARE)
        docs.write("docs/deploy.md", "# Deploy\n\nRun the deploy command.\n")
        docs.write("docs/unlisted.md", "# Unlisted\n\nA page that the llms.txt does not list.\n")
        docs.write("private/secret.md", "# Secret\n")
        docs.lastmod_only.add("/docs/middleware.html")
        yield docs


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(db=str(tmp_path / "index.db"), allowed_private_hosts=["127.0.0.1"], embedder="none")


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def sites(settings: Settings, clock: Clock) -> Iterator[SiteService]:
    service = SiteService(SQLiteStore(settings.db_path), settings, clock=clock)
    yield service
    service.close()
    service.store.close()


def _fresh(settings: Settings, **kwargs: object) -> SiteService:
    return SiteService(SQLiteStore(settings.db_path), settings, **kwargs)  # type: ignore[arg-type]


def _rows(settings: Settings, sql: str) -> int:
    with sqlite3.connect(settings.db_path) as conn:
        return int(conn.execute(sql).fetchone()[0])


def test_add_persists_the_links_and_a_new_service_searches_them_offline(
    sites: SiteService, site: DocsSite, settings: Settings
) -> None:
    info = sites.add("tiny", f"{site.url}/docs/llms.txt")
    assert (info.name, info.docs, info.pages_fetched, info.status) == ("tiny", 3, 0, "ready")
    assert [i.to_dict()["url"] for i in sites.list()] == [f"{site.url}/docs/llms.txt"]
    site.clear()
    other = _fresh(settings)
    [hit] = other.search("cloudflare workers", k=1)
    assert (hit.source, hit.url, hit.title) == ("tiny", f"{site.url}/docs/deploy.md", "Deploy")
    assert 0 < hit.score <= 1 and "**Cloudflare**" in hit.snippet
    assert set(hit.to_dict()) == {"source", "title", "url", "description", "section", "score", "snippet"}
    assert site.requests == []
    other.close()


def _local_copy(docs: DocsSite, file: str, prefix: str) -> str:
    """A real llms.txt from the shared data, its links rewritten to point at the local server."""
    host, _, rest = file.partition("__")
    text = shared("llms-txt", file).read_text(encoding="utf-8")
    text = text.replace(f"https://{host}/", f"{docs.url}/{prefix}/").replace(
        f"https://www.{host}/", f"{docs.url}/{prefix}/"
    )
    return docs.write(f"{prefix}/{rest}", text)


def test_search_ranks_real_sites_together_and_one_at_a_time(sites: SiteService, site: DocsSite) -> None:
    sites.add("hono", _local_copy(site, "hono.dev__llms.txt", "hono"))
    sites.add("vitest", _local_copy(site, "vitest.dev__llms.txt", "vitest"))
    assert {i.name: i.docs for i in sites.list()} == {"hono": 87, "vitest": 172}
    assert sites.search("jwt middleware", k=3)[0].source == "hono"
    assert sites.search("fake timers", k=3)[0].source == "vitest"
    mixed = sites.search("testing", k=50)
    assert {h.source for h in mixed} == {"hono", "vitest"}
    assert all(0 <= h.score <= 1 for h in mixed) and mixed == sorted(mixed, key=lambda h: -h.score)
    assert len({h.url for h in mixed}) == len(mixed)
    only = sites.search("testing", source="hono", k=50)
    assert only and {h.source for h in only} == {"hono"}
    for bad_k in (0, 51):
        with pytest.raises(InputError):
            sites.search("testing", k=bad_k)
    with pytest.raises(NotFoundError):
        sites.search("testing", source="nope")
    with pytest.raises(InputError):
        sites.search("   ")


def test_fetch_serves_markdown_as_is_and_caches_it(sites: SiteService, site: DocsSite) -> None:
    sites.add("tiny", f"{site.url}/docs/llms.txt")
    url = f"{site.url}/docs/routing.md"
    page = sites.fetch(url)
    assert (page.markdown, page.title, page.source, page.from_cache) == (
        ROUTING,
        "Routing guide",
        "tiny",
        False,
    )
    assert page.content_type == "text/markdown"
    again = sites.fetch(url)
    assert again.from_cache and again.markdown == ROUTING
    assert len(site.hits("/docs/routing.md")) == 1


def test_fetch_converts_html_to_clean_markdown(sites: SiteService, site: DocsSite) -> None:
    sites.add("tiny", f"{site.url}/docs/llms.txt")
    page = sites.fetch(f"{site.url}/docs/middleware.html")
    assert page.markdown.startswith("# Middleware\n")
    assert "wombat middleware runs before every handler" in page.markdown
    assert "```" in page.markdown and "app.use(wombat())" in page.markdown
    assert "tracking" not in page.markdown and "Copyright" not in page.markdown


def test_fetch_is_confined_to_listed_urls_and_the_site_directory(sites: SiteService, site: DocsSite) -> None:
    sites.add("tiny", f"{site.url}/docs/llms.txt")
    assert sites.fetch(f"{site.url}/docs/unlisted.md").title == "Unlisted"
    site.clear()
    port = site.url.rsplit(":", 1)[1]
    for url in (
        f"{site.url}/private/secret.md",
        f"{site.url}/docs-evil/routing.md",
        f"{site.url}/docs/../private/secret.md",
        f"http://localhost:{port}/docs/routing.md",
        "https://example.com/docs/routing.md",
        "file:///etc/passwd",
    ):
        with pytest.raises(AccessDenied):
            sites.fetch(url)
    assert site.requests == []


def test_fetched_pages_join_the_main_index_and_the_site_ranking(
    sites: SiteService, site: DocsSite, settings: Settings
) -> None:
    sites.add("tiny", f"{site.url}/docs/llms.txt")
    assert sites.search("quokka radix") == []
    sites.fetch(f"{site.url}/docs/routing.md")
    assert [h.url for h in sites.search("quokka radix")] == [f"{site.url}/docs/routing.md"]
    app = Citedocs(settings)
    try:
        hits = app.search("quokka radix tree", mode="keyword").hits
        assert hits and hits[0].path == f"{site.url}/docs/routing.md" and hits[0].source == "tiny"
        assert "quokka" in hits[0].text
    finally:
        app.close()
    [info] = sites.list()
    assert (info.pages_fetched, info.chunks) == (1, 1)


def test_refresh_revalidates_with_etag_and_last_modified(
    sites: SiteService, site: DocsSite, settings: Settings
) -> None:
    sites.add("tiny", f"{site.url}/docs/llms.txt")
    sites.fetch(f"{site.url}/docs/routing.md")
    sites.fetch(f"{site.url}/docs/middleware.html")
    site.clear()
    info = sites.refresh("tiny")
    assert info.changes == {
        "pages_checked": 2,
        "pages_unchanged": 2,
        "pages_updated": 0,
        "pages_removed": 0,
        "pages_failed": 0,
        "llms_txt_changed": 0,
    }
    assert {r.path: (r.status, r.sent) for r in site.requests} == {
        "/docs/llms.txt": (304, 0),
        "/docs/routing.md": (304, 0),
        "/docs/middleware.html": (304, 0),
    }
    assert "If-None-Match" in site.hits("/docs/routing.md")[0].headers
    assert "If-Modified-Since" in site.hits("/docs/middleware.html")[0].headers

    site.write("docs/routing.md", ROUTING.replace("quokka", "platypus"))
    site.clear()
    info = sites.refresh("tiny")
    assert info.changes is not None and (info.changes["pages_updated"], info.changes["pages_unchanged"]) == (
        1,
        1,
    )
    assert [r.status for r in site.hits("/docs/routing.md")] == [200]
    assert "platypus" in sites.fetch(f"{site.url}/docs/routing.md").markdown
    app = Citedocs(settings)
    try:
        assert app.search("platypus", mode="keyword").hits
        assert not app.search("quokka", mode="keyword").hits
    finally:
        app.close()


def test_refresh_picks_up_new_links_and_drops_pages_that_are_gone(sites: SiteService, site: DocsSite) -> None:
    sites.add("tiny", f"{site.url}/docs/llms.txt")
    sites.fetch(f"{site.url}/docs/unlisted.md")
    (site.root / "docs" / "unlisted.md").unlink()
    site.write("docs/llms.txt", LLMS_TXT.format(base=site.url) + "- [Caching](caching.md): ETag helpers.\n")
    info = sites.refresh("tiny")
    assert (info.docs, info.pages_fetched, info.chunks) == (4, 0, 0)
    assert info.changes is not None and info.changes["pages_removed"] == 1
    assert info.changes["llms_txt_changed"] == 1
    assert sites.search("etag helpers", k=1)[0].url == f"{site.url}/docs/caching.md"


def test_a_failing_site_is_skipped_for_five_minutes_unless_refreshed(
    site: DocsSite, tmp_path: Path, clock: Clock
) -> None:
    settings = Settings(
        db=str(tmp_path / "defaults.db"), allowed_private_hosts=["127.0.0.1"], default_sites=True
    )
    defaults = [("tiny", f"{site.url}/docs/llms.txt"), ("broken", f"{site.url}/broken/llms.txt")]
    sites = _fresh(settings, clock=clock, defaults=defaults)
    assert {i.name: i.status for i in sites.list()} == {"tiny": "pending", "broken": "pending"}
    assert site.requests == []

    assert sites.search("routing")[0].source == "tiny"
    broken = {i.name: i for i in sites.list()}["broken"]
    assert broken.status == "error" and "404" in (broken.last_error or "")
    assert broken.retry_in_s == FAILURE_BACKOFF_S
    clock.now += FAILURE_BACKOFF_S - 1
    sites.search("routing")
    assert len(site.hits("/broken/llms.txt")) == 1
    with pytest.raises(FetchError, match="refresh broken"):
        sites.search("routing", source="broken")
    clock.now += 2
    sites.search("routing")
    assert len(site.hits("/broken/llms.txt")) == 2

    site.write("broken/llms.txt", "# Fixed\n\n- [Fixed page](page.md): now it works\n")
    info = sites.refresh("broken")
    assert (info.status, info.last_error, info.docs) == ("ready", None, 1)
    assert sites.search("fixed page", source="broken")[0].source == "broken"
    sites.remove("broken")
    sites.close()
    again = _fresh(settings, clock=clock, defaults=defaults)
    assert [i.name for i in again.list()] == ["tiny"]  # defaults are seeded once, removals stick
    again.close()


def test_default_sites_are_off_unless_configured(sites: SiteService) -> None:
    assert sites.list() == []
    assert [name for name, _ in DEFAULT_SITES] == [
        "strands",
        "kiro",
        "aws-bedrock-userguide",
        "aws-agentic-ai-lens",
        "aws-bedrock-agentcore-devguide",
        "mcp",
    ]


def test_duplicates_and_bad_input_are_refused(sites: SiteService, site: DocsSite) -> None:
    url = f"{site.url}/docs/llms.txt"
    sites.add("tiny", url)
    with pytest.raises(InputError, match="already registered"):
        sites.add("tiny", f"{site.url}/other/llms.txt")
    with pytest.raises(InputError, match="already registered as site 'tiny'"):
        sites.add("tiny2", url)
    with pytest.raises(InputError):
        sites.add("has space", url)
    with pytest.raises(AccessDenied):
        sites.add("ftp", "ftp://127.0.0.1/llms.txt")
    with pytest.raises(FetchError, match="404"):
        sites.add("missing", f"{site.url}/missing/llms.txt")
    assert [i.name for i in sites.list()] == ["tiny"]


def test_an_llms_txt_with_no_links_is_refused_and_nothing_is_kept(
    sites: SiteService, site: DocsSite, settings: Settings
) -> None:
    url = site.write("empty/llms.txt", "# Empty\n\n> Nothing is listed here.\n\nJust prose.\n")
    with pytest.raises(InputError, match="no links"):
        sites.add("empty", url)
    assert sites.list() == []
    assert _rows(settings, "SELECT COUNT(*) FROM sources") == 0


def test_remove_purges_links_pages_and_chunks(sites: SiteService, site: DocsSite, settings: Settings) -> None:
    sites.add("tiny", f"{site.url}/docs/llms.txt")
    sites.fetch(f"{site.url}/docs/routing.md")
    # the fetched page's chunk, and one link document for each of the two pages not fetched
    assert _rows(settings, "SELECT COUNT(*) FROM chunks") == 3
    info = sites.remove("tiny")
    assert (info.name, info.pages_fetched) == ("tiny", 1)
    for table in ("sources", "site_links", "site_pages", "site_state", "documents", "chunks", "chunks_fts"):
        assert _rows(settings, f"SELECT COUNT(*) FROM {table}") == 0, table
    assert sites.search("routing") == []
    with pytest.raises(AccessDenied):
        sites.fetch(f"{site.url}/docs/routing.md")
    with pytest.raises(NotFoundError):
        sites.remove("tiny")


def test_inline_pages_are_stored_without_fetching(
    sites: SiteService, site: DocsSite, settings: Settings
) -> None:
    full = (
        "\n".join(
            f"# {title}\n\nSource: {site.url}/full/{slug}.md\n\n{body}\n"
            for title, slug, body in [
                ("Install", "install", "Install with the numbat installer."),
                ("Configure", "configure", "Configure the echidna settings file."),
            ]
        )
        + "# Orphan\n\nA page without a URL about bilbies.\n"
    )
    url = site.write("full/llms-full.txt", full)
    info = sites.add("full", url)
    assert (info.docs, info.pages_fetched) == (3, 3)
    site.clear()
    page = sites.fetch(f"{site.url}/full/install.md")
    assert page.from_cache and "numbat" in page.markdown
    [orphan] = sites.search("bilbies")
    assert orphan.url == f"{url}#orphan" and "bilbies" in sites.fetch(orphan.url).markdown
    assert site.requests == []
    app = Citedocs(settings)
    try:
        assert app.search("echidna", mode="keyword").hits[0].path == f"{site.url}/full/configure.md"
    finally:
        app.close()


def test_real_llms_ctx_inline_pages(sites: SiteService, site: DocsSite) -> None:
    info = sites.add("fasthtml", _local_copy(site, "fastht.ml__llms-ctx.txt", "fasthtml"))
    assert info.pages_fetched == 7 and info.chunks > 7
    assert [r.path for r in site.requests] == ["/fasthtml/llms-ctx.txt"]
    assert sites.search("htmx reference", k=1)[0].source == "fasthtml"


def test_the_page_cache_is_lru_and_bounded(site: DocsSite, tmp_path: Path) -> None:
    settings = Settings(db=str(tmp_path / "lru.db"), allowed_private_hosts=["127.0.0.1"], page_cache_size=2)
    sites = _fresh(settings)
    sites.add("tiny", f"{site.url}/docs/llms.txt")
    a, b, c = (f"{site.url}/docs/{name}" for name in ("routing.md", "middleware.html", "deploy.md"))
    for url in (a, b, a, c):
        sites.fetch(url)
    assert sites.fetch(a).from_cache and sites.fetch(c).from_cache
    site.clear()
    sites.fetch(b)  # evicted: revalidated with a conditional request, not downloaded again
    assert [(r.path, r.status) for r in site.requests] == [("/docs/middleware.html", 304)]
    sites.close()


def test_a_site_that_is_down_serves_the_stored_copy(
    sites: SiteService, site: DocsSite, settings: Settings
) -> None:
    sites.add("tiny", f"{site.url}/docs/llms.txt")
    sites.fetch(f"{site.url}/docs/routing.md")
    site.fail["/docs/routing.md"] = 503
    later = _fresh(settings)
    page = later.fetch(f"{site.url}/docs/routing.md")
    assert page.from_cache and page.markdown == ROUTING
    site.fail["/docs/deploy.md"] = 503
    with pytest.raises(FetchError, match="503"):
        later.fetch(f"{site.url}/docs/deploy.md")  # never stored: nothing to fall back on
    later.close()


def test_home_lists_sites_and_how_to_use_them(sites: SiteService, site: DocsSite) -> None:
    sites.add("tiny", f"{site.url}/docs/llms.txt")
    home = sites.home()
    assert [s["name"] for s in home["sources"]] == ["tiny"]
    assert any("search_docs" in line for line in home["how_to"])
