"""llms.txt sites end to end over a real socket: add a 1,000-link llms.txt, first search, fetch, refresh.

    .venv/bin/python bench/bench_sites_e2e.py [--repeat 5]

A local http.server (127.0.0.1, its own thread) serves a synthetic llms.txt of 1,000 links (the real link texts
of ../shared/data/llms-txt re-listed under unique URLs, as bench_sites.py makes them) and one markdown page
per link. Each repeat uses a new index file. llmstxt-doc-search publishes no numbers to compare.
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from _env import median, pct, print_header
from bench_sites import QUERIES, load_real, synth_llms_txt, time_ms

from citedocs.settings import Settings
from citedocs.sites.service import SiteService
from citedocs.store import SQLiteStore


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def write_site(root: Path, base: str) -> list[str]:
    """docs/llms.txt with 1,000 links under `base`, and a markdown page for each; returns the page URLs."""
    pool = [link for links in load_real().values() for link in links]
    text = synth_llms_txt(pool, 1000, seed=1).replace("https://synth.example/", f"{base}/docs/")
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "llms.txt").write_text(text, encoding="utf-8")
    urls = []
    rng = random.Random(7)
    for line in text.splitlines():
        if line.startswith("- [") and "](" in line:
            url = line.split("](", 1)[1].split(")", 1)[0]
            path = root / url.removeprefix(base + "/")
            path.parent.mkdir(parents=True, exist_ok=True)
            words = " ".join(rng.choice(pool).title for _ in range(200))
            path.write_text(f"# {path.stem}\n\n{words}\n", encoding="utf-8")
            urls.append(url)
    return urls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print_header("bench_sites_e2e: add a 1,000-link llms.txt from a local server, search, fetch, refresh")
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "www"
        server = ThreadingHTTPServer(("127.0.0.1", 0), partial(QuietHandler, directory=str(root)))
        base = f"http://127.0.0.1:{server.server_address[1]}"
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        urls = write_site(root, base)
        llms_txt = f"{base}/docs/llms.txt"
        add_ms, first_ms, warm, fetch_cold, fetch_hit, refresh_ms = [], [], [], [], [], []
        for n in range(args.repeat):
            settings = Settings(
                db=str(Path(tmp) / f"index-{n}.db"), allowed_private_hosts=["127.0.0.1"], embedder="none"
            )
            sites = SiteService(SQLiteStore(settings.db_path), settings)
            add_ms += time_ms(lambda s=sites: s.add("big", llms_txt), 1)
            assert sites.list()[0].docs == 1000
            sites.close()
            fresh = SiteService(SQLiteStore(settings.db_path), settings)  # a new process: nothing in memory
            first_ms += time_ms(lambda s=fresh: s.search("middleware jwt"), 1)
            for query in QUERIES:
                warm += time_ms(lambda q=query, s=fresh: s.search(q, k=5), 1)
            for url in urls[n * 10 : n * 10 + 10]:
                fetch_cold += time_ms(lambda u=url, s=fresh: s.fetch(u), 1)
                fetch_hit += time_ms(lambda u=url, s=fresh: s.fetch(u), 1)
            refresh_ms += time_ms(lambda s=fresh: s.refresh("big"), 1)
            fresh.close()
        server.shutdown()
        server.server_close()
    print(f"add (GET + parse + store 1,000 links): median {median(add_ms):.1f} ms of {args.repeat}")
    print(f"first search in a new service (build index from SQLite + rank): median {median(first_ms):.1f} ms")
    print(f"warm search: P50 {pct(warm, 50):.2f} ms, P95 {pct(warm, 95):.2f} ms ({len(warm)} queries, k=5)")
    print(
        f"fetch a page (GET + store + chunk into main index): median {median(fetch_cold):.1f} ms; "
        f"from the LRU cache {median(fetch_hit):.3f} ms"
    )
    print(f"refresh (llms.txt + 10 stored pages, conditional GETs): median {median(refresh_ms):.1f} ms")


if __name__ == "__main__":
    main()
