"""A small site fetched whole after add-site (issue 47): is the right page in the top 5 before and after?

    .venv/bin/python bench/bench_site_prefetch.py [--mode keyword]

The site is the 45 docs.claude.com pages of ../shared/data/claude-docs-qa served on 127.0.0.1 with an llms.txt
of titles only (tests/fakes/claude_site.py), the 60 questions of that set. A new index registers the site; the
questions are searched while only the titles are known (links), then `Citedocs.auto_prefetch` fetches the
pages in the background, politely (one request at a time, AUTO_FETCH_INTERVAL_S apart, robots.txt read), and
the same questions are searched again. Printed: page@5 (a page the answer lives in among the top 5), MRR@5,
the fetch's wall time and request count, and the search latency median.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _env import SHARED_DATA, print_header

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from citedocs.service import Citedocs
from citedocs.settings import Settings
from citedocs.sites.prefetch import AUTO_FETCH_INTERVAL_S
from fakes.claude_site import ClaudeCase, claude_cases, write_claude_site
from fakes.docs_site import serve_docs


def measure(app: Citedocs, cases: list[ClaudeCase], mode: str) -> dict[str, float]:
    found, rr, ms = [], [], []
    for case in cases:
        t0 = time.perf_counter()
        hits = app.search(case.question, k=5, mode=mode).hits
        ms.append((time.perf_counter() - t0) * 1000)
        ranks = [i for i, h in enumerate(hits, 1) if h.path.split("#")[0] in case.urls]
        found.append(1.0 if ranks else 0.0)
        rr.append(1.0 / ranks[0] if ranks else 0.0)
    return {
        "page@5": round(sum(found), 0),
        "of": len(cases),
        "mrr@5": round(statistics.mean(rr), 3),
        "query_ms_p50": round(statistics.median(ms), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", default="keyword")
    args = parser.parse_args()
    print_header("A small site fetched whole after add-site: page@5 before and after (issue 47)")
    data = SHARED_DATA / "claude-docs-qa"
    with (
        tempfile.TemporaryDirectory(prefix="citedocs-prefetch-") as tmp,
        serve_docs(Path(tmp) / "www") as site,
    ):
        llms_txt, urls = write_claude_site(site, data)
        cases = claude_cases(data, urls)
        embedder = "none" if args.mode == "keyword" else "auto"
        settings = Settings(
            db=str(Path(tmp) / "i.db"), allowed_private_hosts=["127.0.0.1"], embedder=embedder
        )
        app = Citedocs(settings)
        try:
            info = app.sites.add("claude", llms_txt)
            before = measure(app, cases, args.mode)
            print(json.dumps({"stage": "titles only (links)", "pages": info.docs, **before}), flush=True)
            site.clear()
            t0 = time.perf_counter()
            thread, note = app.auto_prefetch("claude")
            assert thread is not None, note
            thread.join()
            fetch_s = time.perf_counter() - t0
            app.wait_for_embeddings()
            after = measure(app, cases, args.mode)
            print(
                json.dumps(
                    {
                        "stage": "after the background fetch",
                        "fetch_s": round(fetch_s, 1),
                        "requests": len(site.requests),
                        "interval_s": AUTO_FETCH_INTERVAL_S,
                        **after,
                    }
                ),
                flush=True,
            )
        finally:
            app.close()


if __name__ == "__main__":
    main()
