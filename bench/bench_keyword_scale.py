"""Keyword search at 1×, 10× and 100× SciFact: citedocs' in-memory BM25 impacts, FTS5 and bm25s, one process.

    nice -n 10 .venv/bin/python bench/bench_keyword_scale.py [--scales 1,10,100] [--cache DIR] [--pg]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from _env import SHARED_DATA
from bench_postgres import original_records, scaled

from citedocs.eval.beir import load_beir
from citedocs.settings import Settings
from citedocs.store import SQLiteStore, Store

BATCH = 500


def build(store: Store, folder: Path, scale: int) -> dict[str, float]:
    """Write SciFact and `scale - 1` perturbed copies through `Store.replace_documents`, 500 per commit."""
    originals = original_records(load_beir(folder), Settings())
    source = store.add_source("folder", "beir", "beir://")
    batch = []
    docs = 0
    started = time.perf_counter()
    for doc, chunks, _ in scaled(originals, scale - 1):
        batch.append((doc, chunks))
        docs += 1
        if len(batch) >= BATCH:
            store.replace_documents(source.id, batch)
            batch = []
    store.replace_documents(source.id, batch)
    return {"docs": docs, "build_s": round(time.perf_counter() - started, 2)}


def cached_sqlite(cache: Path, folder: Path, scale: int) -> tuple[SQLiteStore, dict[str, float]]:
    path = cache / f"scifact-x{scale}.db"
    meta = path.with_suffix(".json")
    if path.exists() and meta.exists():
        return SQLiteStore(path), json.loads(meta.read_text(encoding="utf-8"))
    for old in cache.glob(path.name + "*"):
        old.unlink()
    store = SQLiteStore(path)
    info = build(store, folder, scale)
    meta.write_text(json.dumps(info), encoding="utf-8")
    return store, info


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--folder", default=str(SHARED_DATA / "scifact"))
    parser.add_argument("--scales", default="1,10,100")
    parser.add_argument("--cache", default="/tmp/citedocs-kw-bench")
    parser.add_argument("--build-only", action="store_true")
    args = parser.parse_args()
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    for scale in [int(s) for s in args.scales.split(",")]:
        store, info = cached_sqlite(cache, Path(args.folder), scale)
        print(scale, info, flush=True)
        store.close()


if __name__ == "__main__":
    main()
