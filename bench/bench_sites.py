"""llms.txt sites: parse + index speed, search latency, and a side-by-side with bm25s on the same link texts.

    .venv/bin/python bench/bench_sites.py [--repeat 7]

Sources: the 8 real files in ../shared/data/llms-txt, plus two synthetic ones (1,000 and 500 links made by
re-listing the real links under unique URLs) = 10 sources. llmstxt-doc-search publishes no numbers to compare.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from collections.abc import Callable

import bm25s
import Stemmer
from _env import SHARED_DATA, median, pct, print_header

from citedocs.sites import rank as sites_rank
from citedocs.sites.rank import SiteIndex
from citedocs.sources.llmstxt import DocLink, parse_llms_txt
from citedocs.text import links

QUERIES = [
    "routing",
    "middleware jwt",
    "mock timers",
    "snapshot testing",
    "coverage",
    "agent tools",
    "streaming output",
    "htmx reference",
    "websockets",
    "openai model",
    "date picker",
    "dark mode",
    "form validation",
    "prompt caching",
    "browser mode providers",
    "useEffect",
    "pydantic_ai.agent",
    "--watch",
    "install with vite",
    "cors",
    "cookie helper",
    "test environment jsdom",
    "structured output",
    "dependency injection",
    "deploy to cloudflare workers",
    "table component",
    "retries",
    "fake timers",
    "custom reporter",
    "toast notifications",
]


def load_real() -> dict[str, list[DocLink]]:
    sources = {}
    for path in sorted((SHARED_DATA / "llms-txt").glob("*.txt")):
        host, _, rest = path.name.partition("__")
        parsed = parse_llms_txt(path.read_text(encoding="utf-8"), f"https://{host}/{rest}")
        sources[path.name.removesuffix(".txt")] = parsed.links
    return sources


def synth_llms_txt(links: list[DocLink], count: int, seed: int) -> str:
    """An llms.txt of `count` links: the real ones re-listed, shuffled, under unique URLs and sections."""
    rng = random.Random(seed)
    lines = ["# Synthetic", "", "> Real link texts under unique URLs.", ""]
    for n in range(count):
        link = rng.choice(links)
        if n % 40 == 0:
            lines += ["", f"## {link.section or 'Docs'} {n // 40}", ""]
        tail = f": {link.description}" if link.description else ""
        lines.append(
            f"- [{link.title}](https://synth.example/{seed}/{n}/{link.url.rsplit('/', 1)[-1]}){tail}"
        )
    return "\n".join(lines) + "\n"


def clear_caches() -> None:
    links.analyze_token.cache_clear()
    sites_rank._label_terms.cache_clear()


def time_ms(fn: Callable[[], object], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    print_header("bench_sites: llms.txt parse + index, search latency, vs bm25s")
    print(
        f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores (shared machines inflate times)"
    )

    real = load_real()
    pool = [link for links in real.values() for link in links]
    big_text = synth_llms_txt(pool, 1000, seed=1)
    sources = dict(real)
    sources["synthetic-1000"] = parse_llms_txt(big_text).links
    sources["synthetic-500"] = parse_llms_txt(synth_llms_txt(pool, 500, seed=2)).links
    assert len(sources["synthetic-1000"]) == 1000

    def parse_and_index() -> None:
        SiteIndex().add_source("big", parse_llms_txt(big_text).links)

    def parse_and_index_cold() -> None:
        clear_caches()
        parse_and_index()

    parse_only = time_ms(lambda: parse_llms_txt(big_text), args.repeat)
    cold = time_ms(parse_and_index_cold, args.repeat)
    warm = time_ms(parse_and_index, args.repeat)
    print(
        f"parse + index 1,000 links: {median(cold):.1f} ms cold caches, {median(warm):.1f} ms warm "
        f"(parse alone {median(parse_only):.1f} ms; medians of {args.repeat})"
    )

    index = SiteIndex()
    build = time_ms(lambda: [index.add_source(n, links) for n, links in sources.items()], 1)[0]
    n_links = sum(len(links) for links in sources.values())
    latencies = []
    for _ in range(args.repeat):
        for query in QUERIES:
            latencies += time_ms(lambda q=query: index.search(q, k=5), 1)
    print(
        f"search over {len(sources)} sources / {n_links} links (index built in {build:.1f} ms): "
        f"P50 {pct(latencies, 50):.2f} ms, P95 {pct(latencies, 95):.2f} ms "
        f"({len(QUERIES)} queries x {args.repeat}, k=5, snippets included)"
    )

    docs = [(name, link) for name, links in sources.items() for link in links]
    texts = [
        f"{link.title} {link.section} {sites_rank.url_path_text(link.url)} {link.description}"
        for _, link in docs
    ]
    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25()

    def bm25s_index() -> None:
        tokens = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)
        retriever.index(tokens, show_progress=False)

    def bm25s_top(query: str) -> list[int]:
        tokens = bm25s.tokenize([query], stopwords="en", stemmer=stemmer, show_progress=False)
        if not tokens.vocab:
            return []
        found, _ = retriever.retrieve(tokens, k=5, show_progress=False, n_threads=0)
        return [int(i) for i in found[0]]

    ours_index = time_ms(
        lambda: [SiteIndex().add_source(n, links) for n, links in sources.items()], args.repeat
    )
    theirs_index = time_ms(bm25s_index, args.repeat)
    theirs_latency = []
    for _ in range(args.repeat):
        for query in QUERIES:
            theirs_latency += time_ms(lambda q=query: bm25s_top(q), 1)
    position = {(name, link.url): n for n, (name, link) in enumerate(docs)}
    overlaps = []
    for query in QUERIES:
        ours = {position[(hit.source, hit.url)] for hit in index.search(query, k=5)}
        theirs = set(bm25s_top(query))
        if ours or theirs:
            overlaps.append(len(ours & theirs) / max(len(ours), len(theirs)))
    print()
    print(f"same {n_links} link texts (title, section, url path, description); medians")
    print(f"  {'':34} {'citedocs':>14} {'bm25s ' + bm25s.__version__:>14}")
    print(f"  {'index all 10 sources, ms':34} {median(ours_index):14.1f} {median(theirs_index):14.1f}")
    for label, q in (("query P50, ms", 50), ("query P95, ms", 95)):
        print(f"  {label:34} {pct(latencies, q):14.2f} {pct(theirs_latency, q):14.2f}")
    mean_overlap = sum(overlaps) / len(overlaps)
    print(f"  top-5 overlap, mean of {len(overlaps)} queries      {mean_overlap:14.2f}")
    print("  citedocs: BM25F fields, bigrams, technical tokens, snippets, 0-1 scores; bm25s: one flat field")


if __name__ == "__main__":
    main()
