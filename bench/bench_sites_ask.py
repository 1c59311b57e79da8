"""Asking a documentation site nobody fetched yet: latency of the first answer, broken down, and of a second.

    .venv/bin/python bench/bench_sites_ask.py [--cases 20] [--mode keyword|hybrid]

The site is real: the 45 docs.claude.com pages of ../shared/data/claude-docs-qa served on 127.0.0.1 with an
llms.txt of titles (tests/fakes/claude_site.py). For each question, a new index registers the site (links
only), then the question is asked twice through AnswerService with a scripted model on a real socket (its time
is ~0: this measures citedocs, not the model; docs/benchmarks.md has the real model's figures). Reported per
stage: ranking (first retrieval), the fetch stage (the pages fetched side by side: network, markdown and
indexing), indexing alone (parse, chunk and store the same pages, timed apart one after another), and the
whole answer; then the second ask of the same question.
Also the committed check of tests/test_sites_ask.py: how often `search` top 5 holds the right pages that
`search-docs` puts in its top 3, and the right page's presence in the answer's sources after fetching.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _env import SHARED_DATA, median, pct, print_header

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from citedocs.index.ingest import ingest
from citedocs.llm.client import LLMClient
from citedocs.parsers.markdown import parse_markdown
from citedocs.service import Citedocs
from citedocs.settings import Settings
from citedocs.store import DocumentRecord, SQLiteStore
from fakes.claude_site import claude_cases, write_claude_site
from fakes.docs_site import serve_docs
from fakes.openai_server import FakeOpenAI, Reply


async def ask(app: Citedocs, question: str, llm: LLMClient) -> tuple[dict[str, Any], list[str]]:
    service = app.answer_service(llm)
    started = time.perf_counter()
    prepared = await service.prepare(question)
    events = [e async for e in service.generate(prepared)]
    done = events[-1].data
    done["wall_ms"] = (time.perf_counter() - started) * 1000
    fetched = [e.data["url"] for e in events if e.event == "fetched" and e.data["ok"]]
    sources = next(e.data["sources"] for e in events if e.event == "sources")
    done["source_paths"] = [s["path"] for s in sources]
    return done, fetched


def index_ms(site_root: Path, base: str, urls: list[str], settings: Settings, tmp: str) -> float:
    """Parse + chunk + store the same pages offline: the indexing part of the fetch stage."""
    Path(f"{tmp}/ingest-only.db").unlink(missing_ok=True)
    store = SQLiteStore(f"{tmp}/ingest-only.db")
    source = store.add_source("site", "x", f"{base}/llms.txt")
    started = time.perf_counter()
    for url in urls:
        text = (site_root / url.removeprefix(base + "/")).read_text(encoding="utf-8")
        record = DocumentRecord(url, url, "markdown", len(text), None, None, "indexed", title=url)
        ingest(store, source.id, record, parse_markdown(text.encode(), url).segments, settings)
    store.close()
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=20)
    parser.add_argument("--mode", default="keyword", choices=["keyword", "hybrid"])
    parser.add_argument(
        "--budget", type=int, default=Settings().ask_fetch_pages, help="pages an answer may fetch"
    )
    args = parser.parse_args()
    print_header(
        f"bench_sites_ask: first and second ask on an unfetched llms.txt site ({args.mode}, "
        f"budget {args.budget} pages)"
    )
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    data = SHARED_DATA / "claude-docs-qa"
    rows: list[dict[str, float]] = []
    right_after_fetch = 0
    with tempfile.TemporaryDirectory() as tmp, serve_docs(Path(tmp) / "www") as site:
        llms_txt, urls = write_claude_site(site, data)
        cases = claude_cases(data, urls)[: args.cases]
        with FakeOpenAI(default=Reply(tokens=["Scripted answer [1]."])) as server:
            llm = LLMClient(server.base_url, "scripted")
            for n, case in enumerate(cases):
                settings = Settings(
                    db=f"{tmp}/i{n}.db",
                    allowed_private_hosts=["127.0.0.1"],
                    embedder="none" if args.mode == "keyword" else "auto",
                    search_mode=args.mode,
                    relevance_threshold=0,
                    ask_fetch_pages=args.budget,
                )
                app = Citedocs(settings)
                try:
                    app.sites.add("claude", llms_txt)
                    if args.mode == "hybrid":
                        app.embed()  # the link titles have vectors before the first question
                        app.start_model()
                        assert app.embedder is not None
                        app.embedder.wait()
                    first, fetched = asyncio.run(ask(app, case.question, llm))
                    second, again = asyncio.run(ask(app, case.question, llm))
                    indexing = index_ms(site.root, site.url, fetched, settings, tmp) if fetched else 0.0
                    right_after_fetch += bool(set(first["source_paths"]) & case.urls)
                    t1, t2 = first["timings"], second["timings"]
                    rows.append(
                        {
                            "pages": len(fetched),
                            "first_retrieval": t1["retrieval_ms"],
                            "fetch_stage": t1["fetch_ms"] or 0.0,
                            "indexing": indexing,
                            "first_total": first["wall_ms"],
                            "second_retrieval": t2["retrieval_ms"],
                            "second_total": second["wall_ms"],
                            "second_pages": len(again),
                        }
                    )
                finally:
                    app.close()
    print(
        f"{len(rows)} questions; pages fetched per first ask: median {median([r['pages'] for r in rows]):g}, "
        f"max {max(r['pages'] for r in rows):g} (budget: {args.budget})"
    )
    print(
        f"second asks that fetched more pages (links that rose into the top k): "
        f"{sum(r['second_pages'] > 0 for r in rows)}/{len(rows)}"
    )
    print(f"answers whose sources hold a right page after fetching: {right_after_fetch}/{len(rows)}\n")
    print("| stage | P50 ms | P95 ms |")
    print("|---|---|---|")
    ranking = [r["first_retrieval"] for r in rows]
    parts = [
        ("first ask: ranking (retrieval over links and passages)", ranking),
        (
            "first ask: fetch stage (pages side by side: network, markdown, indexing)",
            [r["fetch_stage"] for r in rows],
        ),
        (
            "  of which indexing, timed apart (the same pages one after another)",
            [r["indexing"] for r in rows],
        ),
        ("first ask: whole answer (scripted model)", [r["first_total"] for r in rows]),
        ("second ask: retrieval", [r["second_retrieval"] for r in rows]),
        ("second ask: whole answer (scripted model)", [r["second_total"] for r in rows]),
    ]
    for name, values in parts:
        print(f"| {name} | {median(values):.1f} | {pct(values, 95):.1f} |")


if __name__ == "__main__":
    main()
