"""`citedocs bench beir DIR`: index a BEIR data set with the production pipeline and score its queries.

Documents go through the same chunker, analysis, store and (for vector/hybrid) embedding pass as a folder;
a document's score is its best chunk's. Metrics are BEIR's: nDCG@10, recall@100, MRR@10.
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from citedocs.errors import InputError
from citedocs.eval.metrics import mrr_at_k, ndcg_at_k, recall_at_k
from citedocs.index.ingest import prepare
from citedocs.parsers.base import Segment
from citedocs.search.hybrid import fuse
from citedocs.search.keyword import keyword_ranking
from citedocs.service import Citedocs
from citedocs.settings import Settings
from citedocs.store import ChunkRecord, DocumentRecord

DEPTH = 100
BATCH = 500  # documents written per transaction
MODE_ALIASES = {
    "bm25": "keyword",
    "keyword": "keyword",
    "vector": "semantic",
    "semantic": "semantic",
    "hybrid": "hybrid",
}


@dataclass(slots=True)
class BeirData:
    corpus: dict[str, tuple[str, str]]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def load_beir(folder: Path, split: str = "test") -> BeirData:
    corpus_file, queries_file, qrels_file = (
        folder / "corpus.jsonl",
        folder / "queries.jsonl",
        folder / "qrels" / f"{split}.tsv",
    )
    for needed in (corpus_file, queries_file, qrels_file):
        if not needed.exists():
            raise InputError(
                f"{needed} is missing.",
                "Point at a BEIR folder: corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv.",
            )
    corpus = {}
    with corpus_file.open(encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            corpus[str(doc["_id"])] = (doc.get("title") or "", doc.get("text") or "")
    qrels: dict[str, dict[str, int]] = {}
    with qrels_file.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh):
            parts = line.rstrip("\n").split("\t")
            if n == 0 and not parts[-1].strip().lstrip("-").isdigit():
                continue
            if int(parts[2]) > 0:
                qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    queries = {}
    with queries_file.open(encoding="utf-8") as fh:
        for line in fh:
            q = json.loads(line)
            if str(q["_id"]) in qrels:
                queries[str(q["_id"])] = q["text"]
    return BeirData(corpus, queries, qrels)


def index_beir(app: Citedocs, data: BeirData) -> float:
    """Store every document as one source's documents; returns seconds (keyword + embedding)."""
    started = time.perf_counter()
    source = app.store.add_source("folder", "beir", "beir://")
    s = app.settings
    batch: list[tuple[DocumentRecord, list[ChunkRecord]]] = []
    for doc_id, (title, text) in data.corpus.items():
        body = text or title
        segment = Segment(body, (title,) if title else (), 1, body.count("\n") + 1)
        record = DocumentRecord(
            f"beir://{doc_id}", doc_id, "text", len(body), 0, None, "indexed", title=title
        )
        batch.append(prepare(record, [segment], s, title_terms=False))
        if len(batch) == BATCH:  # one commit per batch: a commit per document was a third of the store's CPU
            app.store.replace_documents(source.id, batch)
            batch = []
    if batch:
        app.store.replace_documents(source.id, batch)
    app.embed()
    return time.perf_counter() - started


def run_beir(
    folder: Path, settings: Settings, *, split: str = "test", mode: str = "hybrid"
) -> dict[str, Any]:
    mode = MODE_ALIASES.get(mode, "")
    if not mode:
        raise InputError("Unknown mode.", "Use bm25, vector or hybrid.")
    data = load_beir(folder, split)
    with tempfile.TemporaryDirectory(prefix="citedocs-beir-") as tmp:
        if mode == "keyword":
            settings = settings.model_copy(update={"embedder": "none"})
        app = Citedocs(settings.model_copy(update={"db": str(Path(tmp) / "beir.db")}))
        try:
            index_seconds = index_beir(app, data)
            app.engine.keyword.wait()  # the in-memory keyword index a server builds on its first search
            ndcg, recall, mrr, latencies = [], [], [], []
            for qid, query in data.queries.items():
                t0 = time.perf_counter()
                ranked = _rank(app, query, mode)
                latencies.append((time.perf_counter() - t0) * 1000)
                ndcg.append(ndcg_at_k(ranked, data.qrels[qid], 10))
                recall.append(recall_at_k(ranked, data.qrels[qid], 100))
                mrr.append(mrr_at_k(ranked, data.qrels[qid], 10))
        finally:
            app.close()
    latencies.sort()
    n = len(latencies)
    return {
        "dataset": folder.name,
        "split": split,
        "mode": {"keyword": "bm25", "semantic": "vector"}.get(mode, mode),
        "ndcg@10": round(sum(ndcg) / n, 4),
        "recall@100": round(sum(recall) / n, 4),
        "mrr@10": round(sum(mrr) / n, 4),
        "queries": n,
        "docs": len(data.corpus),
        "index_seconds": round(index_seconds, 2),
        "query_ms_p50": round(latencies[n // 2], 2),
        "query_ms_p95": round(latencies[min(n - 1, int(n * 0.95))], 2),
        "embedder": None if app.embedder is None else app.embedder.name,
    }


def _rank(app: Citedocs, query: str, mode: str) -> list[str]:
    """Document ids best first, each document at its best chunk's rank."""
    keyword = keyword_ranking(app.store, query, DEPTH, index=app.engine.keyword) if mode != "semantic" else []
    ranking = keyword
    if mode != "keyword":
        assert app.embedder is not None
        semantic = app.engine.vectors.top_k(app.embedder.embed_query(query), DEPTH)
        ranking = semantic if mode == "semantic" else fuse(keyword, semantic, DEPTH)
    chunks = app.store.chunks_by_rowid([r for r, _ in ranking])
    out: dict[str, None] = {}
    for rowid, _ in ranking:
        chunk = chunks.get(rowid)
        if chunk is not None:
            out.setdefault(chunk.rel_path, None)
    return list(out)
