"""The candidates for issue 21's keyword engine, side by side on the cached SciFact indexes of
bench_keyword_scale.py (run that first): precomputed impacts in numpy (chosen), the same postings scored per
query from term frequencies (no precomputed impacts), and tantivy (block-max WAND, its own BM25).

    PYTHONPATH=src:/path/to/tantivy nice -n 10 .venv/bin/python bench/studies/keyword_candidates.py [--scales 1,10]

All three get the same FTS5 tokens per chunk and the same analysed query terms, k = 100, one query at a
time, interleaved. tantivy is not a citedocs dependency: install it anywhere on PYTHONPATH to include it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for _env
from _env import SHARED_DATA, pct, print_header

from citedocs.eval.beir import load_beir
from citedocs.search.impacts import K1, B, Segment, Stats, idf, rank
from citedocs.search.keyword import effective_terms
from citedocs.search.keyword_index import KeywordIndex
from citedocs.store import SQLiteStore


def rank_from_tf(segment: Segment, stats: Stats, terms: list[str], k: int) -> list[int]:
    """BM25 computed per posting at query time (what a store without precomputed impacts would do)."""
    scores = np.zeros(len(segment), dtype=np.float32)
    avgdl = np.float32(stats.avgdl)
    for term in terms:
        span = segment.postings(term)
        if span is None:
            continue
        rows = segment.rows[span]
        tf = segment.tf[span]
        w = np.float32(idf(stats.rows, span.stop - span.start))
        lengths = segment.lengths[rows].astype(np.float32)
        scores[rows] += (
            w
            * (tf * np.float32(K1 + 1))
            / (tf + np.float32(K1) * (np.float32(1 - B) + np.float32(B) * lengths / avgdl))
        )
    top = np.argpartition(-scores, k - 1)[:k]
    return segment.rowids[top[np.argsort(-scores[top])]].tolist()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scales", default="1,10")
    parser.add_argument("--cache", default="/tmp/citedocs-kw-bench")
    args = parser.parse_args()
    try:
        import tantivy
    except ImportError:
        tantivy = None
    print_header("Keyword engine candidates (same run; machine shared)")
    data = load_beir(SHARED_DATA / "scifact")
    for scale in [int(s) for s in args.scales.split(",")]:
        store = SQLiteStore(Path(args.cache) / f"scifact-x{scale}.db")
        index = KeywordIndex(store)
        t0 = time.perf_counter()
        index.wait()
        built = {"impacts": time.perf_counter() - t0}
        state = index.current()
        assert state is not None
        segment = state.segments[0]
        searcher = None
        if tantivy is not None:
            t0 = time.perf_counter()
            builder = tantivy.SchemaBuilder()
            builder.add_integer_field("rowid", stored=True, fast=True)
            builder.add_text_field("heading", stored=False, tokenizer_name="whitespace")
            builder.add_text_field("body", stored=False, tokenizer_name="whitespace")
            schema = builder.build()
            tmp = tempfile.mkdtemp(prefix="tantivy-")
            tindex = tantivy.Index(schema, path=tmp)
            writer = tindex.writer(heap_size=500_000_000, num_threads=1)
            with store.keyword_snapshot() as (_, rows):
                for rowid, _s, _f, heading, body in rows:
                    writer.add_document(
                        tantivy.Document(
                            rowid=rowid,
                            heading=" ".join(store.keyword_terms(heading or "")),
                            body=" ".join(store.keyword_terms(body or "")),
                        )
                    )
            writer.commit()
            writer.wait_merging_threads()
            tindex.reload()
            searcher = tindex.searcher()
            built["tantivy"] = time.perf_counter() - t0
        lat: dict[str, list[float]] = {"impacts": [], "tf at query time": [], "tantivy": []}
        for query in data.queries.values():
            terms = [store.keyword_terms(t)[0] for t in effective_terms(store, query, index.document_counts)]  # type: ignore[arg-type]
            t0 = time.perf_counter()
            rank(state.segments, state.stats, terms, 100)
            lat["impacts"].append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            rank_from_tf(segment, state.stats, terms, 100)
            lat["tf at query time"].append((time.perf_counter() - t0) * 1000)
            if searcher is not None:
                t0 = time.perf_counter()
                clauses = [
                    (
                        tantivy.Occur.Should,
                        tantivy.Query.boost_query(tantivy.Query.term_query(schema, "heading", t), 2.0),
                    )
                    for t in terms
                ]
                clauses += [
                    (tantivy.Occur.Should, tantivy.Query.term_query(schema, "body", t)) for t in terms
                ]
                searcher.search(tantivy.Query.boolean_query(clauses), 100)
                lat["tantivy"].append((time.perf_counter() - t0) * 1000)
        print(f"## {scale}x ({index.chunks} chunks)")
        for name, values in lat.items():
            if values:
                build = f"{built[name]:.1f} s" if name in built else "(same arrays)"
                print(
                    f"- {name}: P50 {statistics.median(values):.2f} ms, P95 {pct(values, 95):.2f} ms, build {build}"
                )
        store.close()


if __name__ == "__main__":
    main()
