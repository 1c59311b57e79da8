"""The in-memory keyword index against the store's own BM25 (FTS5, PostgreSQL's SQL): the same rankings and
scores on real documents in English and Japanese, exact filters, changes seen at once in this process and
from another one, and searches answered while it rebuilds."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from citedocs.search.keyword import HEADING_WEIGHT, effective_terms, keyword_ranking
from citedocs.search.keyword_index import KeywordIndex
from citedocs.search.sketches import sketch_of_terms
from citedocs.service import Citedocs
from citedocs.settings import Settings
from citedocs.store import ChunkRecord, DocumentRecord, SQLiteStore, Store, open_store
from citedocs.text.analyzer import terms as analyse
from conftest import REPO, shared

SAMPLES = REPO / "examples" / "sample-docs"


def _queries(store: Store, extra: list[str]) -> list[str]:
    """Every chunk heading and the first words of every chunk, plus `extra`: many terms, rare and common."""
    rows = store._conn().execute("SELECT heading, text FROM chunks ORDER BY id").fetchall()
    out = [str(r[0]) for r in rows if str(r[0]).strip()]
    out += [" ".join(str(r[1]).split()[:12]) for r in rows]
    return [q for q in dict.fromkeys(out + extra) if q.strip()]


def _same(
    store: Store, index: KeywordIndex, query: str, k: int = 20, **filters: list[int] | list[str]
) -> None:
    terms = effective_terms(store, query)
    if not terms:
        return
    ours = index.ranking(terms, k, **filters)  # type: ignore[arg-type]
    assert ours is not None, "the index should answer from memory"
    theirs = store.keyword_search(terms, k, heading_weight=HEADING_WEIGHT, **filters)  # type: ignore[arg-type]
    if isinstance(store, SQLiteStore):
        assert ours == theirs, query  # bit for bit: same rowids, same order, same float scores
    else:  # PostgreSQL sums in its own order: scores agree to rounding, so ties may order differently
        assert len(ours) == len(theirs), query
        for (_, a), (_, b) in zip(ours, theirs, strict=True):
            assert math.isclose(a, b, rel_tol=1e-9), query
        assert {r for r, s in ours if s > theirs[-1][1] * (1 + 1e-9)} <= {r for r, _ in theirs}, query


def _sketches_are_the_rows_terms(store: Store, index: KeywordIndex, gone: list[int] | None = None) -> None:
    """Every live chunk's sketch is the one of its own heading and body terms; a removed chunk has none."""
    view = index.view()
    assert view is not None
    with store.keyword_snapshot() as (_, rows):
        expected = {
            rowid: sketch_of_terms(store.keyword_terms(heading or "") + store.keyword_terms(body or ""))
            for rowid, _src, _fmt, heading, body in rows
        }
    assert expected and all(expected.values())
    assert dict(zip(expected, view.sketches(list(expected)), strict=True)) == expected
    assert view.sketches(gone or []) == [None] * len(gone or [])


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """The sample docs and the Japanese Debian manual, one folder each."""
    shutil.copytree(SAMPLES, tmp_path / "samples")
    shutil.copytree(shared("ja-developers-reference") / "docs", tmp_path / "ja")
    return tmp_path


def test_rankings_and_scores_equal_fts5_on_english_and_japanese_documents(corpus: Path) -> None:
    app = Citedocs(Settings(db=str(corpus / "index.sqlite3"), embedder="none"))
    try:
        app.add_folder(corpus / "samples")
        app.add_folder(corpus / "ja")
        app.index()
        index = KeywordIndex(app.store)
        assert index.wait(60)
        cases = (shared("ja-developers-reference") / "cases.jsonl").read_text(encoding="utf-8").splitlines()
        questions = [json.loads(line)["question"] for line in cases]
        queries = _queries(app.store, [*questions, "snake_case config.toml", "--dry-run", "v2.3 API"])
        assert len(queries) > 100
        for query in queries:
            _same(app.store, index, query)
        # and through the function search calls, with its identifier handling
        for query in questions[:10]:
            expected = keyword_ranking(app.store, query, 10)
            assert keyword_ranking(app.store, query, 10, index=index) == expected
    finally:
        app.close()


def _chunk(i: int, text: str, heading: str = "Guide") -> ChunkRecord:
    return ChunkRecord(
        f"c{i}",
        i,
        heading,
        None,
        None,
        i,
        i,
        text,
        f"sha{i}",
        3,
        " ".join(analyse(heading)),
        " ".join(analyse(text)),
    )


def _doc(path: str, fmt: str = "markdown", sha: str = "x") -> DocumentRecord:
    return DocumentRecord(path, path, fmt, 10, 1, sha, "indexed")


WORDS = [
    "install",
    "server",
    "config",
    "token",
    "cache",
    "index",
    "query",
    "rotate",
    "log",
    "disk",
    "mount",
    "backup",
    "restore",
    "user",
]


def _text(i: int) -> str:
    return " ".join(WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(3 + i % 9))


def _fill(store: Store, name: str, docs: int, fmt: str = "markdown", start: int = 0) -> int:
    source = store.find_source(name) or store.add_source("folder", name, name)
    for d in range(start, start + docs):
        store.replace_document(
            source.id,
            _doc(f"{name}/{d}.md", fmt),
            [_chunk(j, _text(d * 3 + j), heading=WORDS[d % len(WORDS)]) for j in range(1 + d % 3)],
        )
    return source.id


def test_filters_by_source_and_format_are_exact(backend_db: str) -> None:
    store = open_store(backend_db)
    a = _fill(store, "a", 30, "markdown")
    b = _fill(store, "b", 30, "html")
    index = KeywordIndex(store)
    assert index.wait(30)
    for query in ("install server", "rotate log disk", "backup restore user token"):
        _same(store, index, query)
        _same(store, index, query, source_ids=[a])
        _same(store, index, query, source_ids=[b], formats=["html"])
        _same(store, index, query, formats=["markdown"])
        assert index.ranking([query.split()[0]], 10, source_ids=[b], formats=["markdown"]) == []
    store.close()


def test_adds_removals_and_reindexing_are_seen_by_the_next_search(backend_db: str) -> None:
    store = open_store(backend_db)
    source = _fill(store, "a", 20)
    index = KeywordIndex(store, rebuild_fraction=100.0)  # incremental only: no background rebuild
    assert index.wait(30)
    builds = index.builds
    store.replace_document(source, _doc("a/new.md"), [_chunk(0, "zebra install", heading="Zebra")])
    hits = index.ranking(["zebra"], 5)
    assert hits is not None and len(hits) == 1
    _same(store, index, "zebra install server")
    store.replace_document(source, _doc("a/new.md", sha="y"), [_chunk(0, "giraffe only")])  # reindexed file
    assert index.ranking(["zebra"], 5) == []
    assert index.ranking(["giraff"], 5) is not None and len(index.ranking(["giraff"], 5) or []) == 1
    _same(store, index, "install server giraffe")
    found = store.document_by_path("a/new.md")
    assert found is not None and found[0].id is not None
    giraffe = store.document_rowids(found[0].id)
    store.delete_documents([found[0].id])
    assert index.ranking(["giraff"], 5) == []
    _sketches_are_the_rows_terms(store, index, gone=giraffe)  # a removed segment's row has no sketch
    first = store.document_by_path("a/1.md")
    assert first is not None and first[0].id is not None
    removed = store.document_rowids(first[0].id)
    store.delete_documents([first[0].id])
    _sketches_are_the_rows_terms(store, index, gone=removed)  # nor a row marked dead in a kept segment
    view = index.view()
    assert view is not None and any(s.dead.shape[0] for s in view.state.segments)
    for n in range(12):  # many small changes: segments merge, avgdl drifts; scores stay FTS5's
        _fill(store, "a", 1, start=100 + n)
        _same(store, index, "install server rotate log")
    _sketches_are_the_rows_terms(
        store, index
    )  # merged segments keep each row's sketch (SQLite reuses rowids)
    _fill(store, "b", 10)
    store.remove_source(source)
    _same(store, index, "install server rotate log")
    _same(store, index, "backup restore")
    _sketches_are_the_rows_terms(store, index)
    assert index.builds == builds  # all of it applied incrementally
    store.close()


def test_another_process_writes_are_seen(tmp_path: Path) -> None:
    db = tmp_path / "index.sqlite3"
    store = SQLiteStore(db)
    _fill(store, "a", 10)
    index = KeywordIndex(store)
    assert index.wait(30)
    assert index.ranking(["walrus"], 5) == []
    script = (
        "import sys\n"
        "from citedocs.store import SQLiteStore, DocumentRecord, ChunkRecord\n"
        "s = SQLiteStore(sys.argv[1])\n"
        "src = s.find_source('a')\n"
        "s.replace_document(src.id, DocumentRecord('a/w.md', 'a/w.md', 'markdown', 1, 1, 'x', 'indexed'),\n"
        "    [ChunkRecord('w', 0, 'Walrus', None, None, 1, 1, 'walrus', 'w', 1, 'walrus', 'walrus')])\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    subprocess.run([sys.executable, "-c", script, str(db)], check=True, env=env, timeout=60)
    hits = index.ranking(["walrus"], 5)
    assert hits is not None and len(hits) == 1
    _same(store, index, "walrus install")
    store.close()


def test_a_large_change_rebuilds_in_the_background_while_searches_are_answered(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "index.sqlite3")
    _fill(store, "a", 40)
    index = KeywordIndex(store, sync_changes=10)
    assert index.wait(30)
    errors: list[BaseException] = []
    answered = 0
    stop = threading.Event()

    def searcher() -> None:
        nonlocal answered
        while not stop.is_set():
            try:
                hits = keyword_ranking(store, "install server rotate", 10, index=index)
                assert all(score > 0 for _, score in hits)
                answered += 1
            except BaseException as exc:
                errors.append(exc)
                return

    threads = [threading.Thread(target=searcher) for _ in range(3)]
    for thread in threads:
        thread.start()
    _fill(store, "b", 60)  # each document its own commit: many changes while the threads search
    stop.set()
    for thread in threads:
        thread.join(30)
    assert not errors, errors
    assert answered > 0
    assert index.wait(30)
    assert index.builds >= 2  # the first build and at least one rebuild after the large change
    _same(store, index, "install server rotate")
    _same(store, index, "backup restore user")
    store.close()


def test_a_term_fts5_would_split_is_left_to_the_store(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "index.sqlite3")
    source = store.add_source("folder", "a", "a")
    store.replace_document(source.id, _doc("a/x.md"), [_chunk(0, "ア・イ café")])
    index = KeywordIndex(store)
    assert index.wait(30)
    assert index.ranking(["ア・イ"], 5) is None  # a phrase to FTS5: positions are not kept in memory
    assert keyword_ranking(store, "ア・イ", 5, index=index) == keyword_ranking(store, "ア・イ", 5)
    assert index.ranking(["cafe"], 5) == store.keyword_search(["cafe"], 5)  # diacritics folded as FTS5 does
    store.close()


def test_an_empty_index_builds_and_answers_nothing(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "index.sqlite3")
    index = KeywordIndex(store)
    assert index.wait(30)
    assert index.ranking(["anything"], 5) == []
    source = store.add_source("folder", "a", "a")
    store.replace_document(source.id, _doc("a/x.md"), [_chunk(0, "anything at all")])
    assert len(index.ranking(["anyth"], 5) or []) == 1
    store.close()


def test_status_says_where_keyword_search_runs_and_the_setting_turns_memory_off(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Rotation\n\nOld logs are rotated nightly.\n", encoding="utf-8")
    for memory, state in ((True, "memory"), (False, "off")):
        app = Citedocs(
            Settings(db=str(tmp_path / f"{memory}.sqlite3"), embedder="none", keyword_memory=memory)
        )
        try:
            app.add_folder(docs)
            app.index()
            first = app.search("rotated logs", mode="keyword").hits  # starts the build; the store answers
            app.engine.keyword.wait(30)
            again = app.search("rotated logs", mode="keyword").hits
            assert [h.chunk_id for h in first] == [h.chunk_id for h in again] and again
            assert [h.score for h in first] == [h.score for h in again]
            status = app.status()["keyword_index"]
            assert status["state"] == state
            assert (status["chunks"] == 1) is memory
        finally:
            app.close()


def test_a_reopened_index_loads_the_saved_keyword_index_and_catches_up_by_the_change_log(
    tmp_path: Path,
) -> None:
    db = tmp_path / "index.sqlite3"
    store = SQLiteStore(db)
    source = _fill(store, "a", 30)
    first = KeywordIndex(store, saved=db)
    assert first.wait(30) and first.builds == 1
    assert (tmp_path / "index.sqlite3.keyword").is_file()
    store.replace_document(source, _doc("a/new.md"), [_chunk(0, "zebra install", heading="Zebra")])
    store.close()

    store = SQLiteStore(db)  # a new process would do the same: no build, the saved index and one change
    reopened = KeywordIndex(store, saved=db)
    assert reopened.current() is not None, "the first search should be answered from the saved index"
    assert reopened.builds == 0 and reopened.load_seconds is not None
    hits = reopened.ranking(["zebra"], 5)
    assert hits is not None and len(hits) == 1
    _same(store, reopened, "zebra install server rotate log")
    _sketches_are_the_rows_terms(store, reopened)  # the saved sketches, and the new segment's
    store.close()

    (tmp_path / "index.sqlite3.keyword").write_bytes(b"PK\x03\x04 not a whole file")  # damaged: built again
    store = SQLiteStore(db)
    damaged = KeywordIndex(store, saved=db)
    assert damaged.current() is None and damaged.wait(30) and damaged.builds == 1
    _same(store, damaged, "zebra install server")
    store.close()

    saved = (
        tmp_path / "index.sqlite3.keyword"
    )  # one written before sketches (format 1): built again, with them
    with np.load(saved) as arrays:
        old = {name: arrays[name] for name in arrays.files if name != "sketch"}
    meta = json.loads(old["meta"].tobytes().decode("utf-8"))
    old["meta"] = np.frombuffer(json.dumps({**meta, "format": 1}).encode("utf-8"), dtype=np.uint8)
    with saved.open("wb") as fh:
        np.savez(fh, **old)
    store = SQLiteStore(db)
    upgraded = KeywordIndex(store, saved=db)
    assert upgraded.current() is None and upgraded.wait(30) and upgraded.builds == 1
    _sketches_are_the_rows_terms(store, upgraded)
    with np.load(saved) as arrays:
        assert "sketch" in arrays.files  # the build saved the new format
    store.close()

    other = tmp_path / "other.sqlite3"  # the same file name beside another database is not its index
    shutil.copy(tmp_path / "index.sqlite3.keyword", tmp_path / "other.sqlite3.keyword")
    store = SQLiteStore(other)
    _fill(store, "b", 5)
    stranger = KeywordIndex(store, saved=other)
    assert stranger.current() is None  # not loaded: a build started instead
    assert stranger.wait(30) and stranger.builds == 1
    _same(store, stranger, "install server")
    store.close()
