"""Fetching a site's pages ahead of questions (`add-site --fetch all|N`): politely, resumably, with progress.

What is left to fetch is read from the store each time (the listed pages without a stored copy), so a run that
was stopped or killed resumes where it left off, and a second run fetches nothing. Politeness: the site's
robots.txt is honoured (Disallow, and a Crawl-delay, which makes the run sequential with that pause), and at
most Settings.site_fetch_concurrency requests to one site are in flight.
"""

from __future__ import annotations

import threading
import time
import urllib.robotparser
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import suppress
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import urldefrag, urlsplit

from citedocs.errors import CitedocsError
from citedocs.sources.fetch import GuardedFetcher
from citedocs.sources.llmstxt import DocLink

__all__ = [
    "AUTO_FETCH_INTERVAL_S",
    "SMALL_SITE_PAGES",
    "PrefetchProgress",
    "Robots",
    "crawl_delay",
    "not_fetched_note",
    "pages_to_fetch",
    "prefetch",
    "read_robots",
]

ROBOTS_AGENT = "citedocs"
# A site whose llms.txt lists at most this many pages is fetched whole in the background once added, so its
# pages are ranked by their content rather than by title and description (issue 47); a larger one is fetched
# page by page as searches and questions need them.
SMALL_SITE_PAGES = 200
# Seconds between the starts of two requests of that automatic fetch (one at a time), unless robots.txt's
# Crawl-delay asks for more: 200 pages take under two minutes.
AUTO_FETCH_INTERVAL_S = 0.5


def not_fetched_note(name: str, listed: int, fetched: int) -> str:
    """What a user reads after adding a site that is not fetched whole."""
    left = max(0, listed - fetched)
    return (
        f"{left} of {listed} pages of {name} are not fetched yet: they are ranked by title and description "
        f"until a search or question fetches them. `citedocs refresh {name} --fetch all` fetches them all."
    )


@dataclass(slots=True)
class PrefetchProgress:
    site: str
    total: int
    done: int = 0
    failed: int = 0
    skipped: int = 0  # refused by robots.txt
    current: str | None = None
    delay_s: float = 0.0
    stopped: bool = False
    errors: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Robots:
    """What a site's robots.txt says to citedocs; `allows` is None when there is no usable file."""

    parser: urllib.robotparser.RobotFileParser | None
    crawl_delay: float

    def allows(self, url: str) -> bool:
        return self.parser is None or self.parser.can_fetch(ROBOTS_AGENT, url)


def read_robots(fetcher: GuardedFetcher, site_url: str) -> Robots:
    """The robots.txt at the site's origin, through the guarded fetcher; absent or unreadable means no rules."""
    parts = urlsplit(site_url)
    try:
        text = fetcher.fetch(f"{parts.scheme}://{parts.netloc}/robots.txt").text()
    except CitedocsError:
        return Robots(None, 0.0)
    parser = urllib.robotparser.RobotFileParser()
    parser.parse(text.splitlines())
    return Robots(parser, min(crawl_delay(text), 60.0))


def crawl_delay(robots_txt: str) -> float:
    """The Crawl-delay for citedocs (else for `*`) in seconds; the standard library reads whole seconds only."""
    delays: dict[str, float] = {}
    agents: list[str] = []
    in_rules = False
    for raw in robots_txt.splitlines():
        key, _, value = raw.split("#", 1)[0].partition(":")
        key, value = key.strip().lower(), value.strip()
        if key == "user-agent":
            if in_rules:
                agents, in_rules = [], False
            agents.append(value.lower())
        elif key:
            in_rules = True
            if key == "crawl-delay":
                with suppress(ValueError):
                    for agent in agents:
                        delays.setdefault(agent, max(0.0, float(value)))
    return delays.get(ROBOTS_AGENT, delays.get("*", 0.0))


def pages_to_fetch(links: list[DocLink], stored: set[str], limit: int | None) -> list[str]:
    """Listed pages without a stored copy, in llms.txt order (fragments of one page once), at most `limit`."""
    urls: dict[str, None] = {}
    for link in links:
        page = urldefrag(link.url).url
        if page not in stored and link.url not in stored:
            urls.setdefault(page, None)
    todo = list(urls)
    return todo if limit is None else todo[: max(0, limit)]


def prefetch(
    site: str,
    urls: list[str],
    fetch_page: Callable[[str], object],
    *,
    concurrency: int,
    delay_s: float,
    robots: Robots,
    progress: Callable[[PrefetchProgress], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> PrefetchProgress:
    """Fetch `urls` with `fetch_page` (which stores the page); a failure is counted and the run goes on."""
    state = PrefetchProgress(site, len(urls), delay_s=delay_s)
    lock = threading.Lock()

    def one(url: str) -> None:
        try:
            fetch_page(url)
        except CitedocsError as exc:
            with lock:
                state.failed += 1
                if len(state.errors) < 20:
                    state.errors.append({"url": url, "error": exc.message})
        else:
            with lock:
                state.done += 1

    allowed = []
    for url in urls:
        if robots.allows(url):
            allowed.append(url)
        else:
            state.skipped += 1
    workers = 1 if delay_s > 0 else max(1, concurrency)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="citedocs-prefetch") as pool:
        running: set[Future[None]] = set()
        last_start = 0.0
        for url in allowed:
            if should_stop is not None and should_stop():
                state.stopped = True
                break
            while len(running) >= workers:
                _finished, running = wait(running, return_when=FIRST_COMPLETED)
                if progress is not None:
                    progress(state)
            if delay_s > 0:
                time.sleep(max(0.0, last_start + delay_s - time.monotonic()))
            last_start = time.monotonic()
            state.current = url
            running.add(pool.submit(one, url))
        wait(running)
    state.current = None
    if progress is not None:
        progress(state)
    return state
