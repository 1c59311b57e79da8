"""The store's contract, run against both backends: a SQLite file and a real PostgreSQL with pgvector."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from citedocs.embed.blob import to_blob
from citedocs.errors import StoreError
from citedocs.search.hybrid import VectorSearch
from citedocs.sources.llmstxt import DocLink
from citedocs.store import ChunkRecord, DocumentRecord, SQLiteStore, Store, is_postgres, open_store
from citedocs.store.migrate import migrations
from citedocs.store.site_tables import SiteTables, StoredPage
from citedocs.text.analyzer import terms as analyse


def _chunk(i: int, text: str, heading: str = "H") -> ChunkRecord:
    return ChunkRecord(
        f"id{i}",
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


def _doc(path: str, sha: str = "x") -> DocumentRecord:
    return DocumentRecord(path, path, "markdown", 10, 1, sha, "indexed")


def _count(store: Store, table: str) -> int:
    return int(store._conn().execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])


@pytest.fixture
def store(backend_db: str) -> Store:
    return open_store(backend_db)


def test_schema_comes_from_numbered_migrations(store: Store) -> None:
    if isinstance(store, SQLiteStore):
        assert store._conn().execute("PRAGMA user_version").fetchone()[0] == migrations()[-1][0] >= 1
        assert store._conn().execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    else:
        assert store._conn().execute("SELECT MAX(version) FROM citedocs_schema").fetchone()[0] >= 1
        assert store._conn().execute("SELECT extname FROM pg_extension WHERE extname = 'vector'").fetchone()


def test_replace_document_swaps_chunks_and_keyword_rows(store: Store) -> None:
    src = store.add_source("folder", "/f", "/f")
    store.replace_document(src.id, _doc("/f/a.md"), [_chunk(1, "alpha beta"), _chunk(2, "gamma")])
    assert [r for r, _ in store.keyword_search(["gamma"], 5)]
    store.replace_document(src.id, _doc("/f/a.md", "y"), [_chunk(3, "delta")])
    assert store.keyword_search(["gamma"], 5) == []
    assert len(store.keyword_search(["delta"], 5)) == 1
    assert _count(store, "chunks") == 1
    assert _count(store, "chunks_fts" if isinstance(store, SQLiteStore) else "postings") >= 1
    assert store.counts(src.id) == {
        "documents": 1,
        "indexed": 1,
        "failed": 0,
        "empty": 0,
        "chunks": 1,
        "links": 0,
    }


def test_a_chunk_read_back_has_every_field_where_it_belongs(store: Store) -> None:
    """Rows become StoredChunks by position: a column moved in the query must not shift a field."""
    src = store.add_source("folder", "docs", "/f")
    store.replace_document(
        src.id,
        DocumentRecord("/f/a.md", "a.md", "markdown", 10, 1, "d", "indexed"),
        [ChunkRecord("c1", 0, "Head", 2, 3, 4, 9, "alpha text", "sha-c1", 3, "head", "alpha text")],
    )
    rowid = store.keyword_search(["alpha"], 1)[0][0]
    by_rowid = store.chunks_by_rowid([rowid])[rowid]
    assert by_rowid == store.chunk_by_id("c1") == store.chunks_of_document(by_rowid.document_id)[0]
    assert (by_rowid.rowid, by_rowid.chunk_id, by_rowid.heading, by_rowid.page_start, by_rowid.page_end) == (
        rowid,
        "c1",
        "Head",
        2,
        3,
    )
    assert (by_rowid.line_start, by_rowid.line_end, by_rowid.text, by_rowid.sha256) == (
        4,
        9,
        "alpha text",
        "sha-c1",
    )
    assert (by_rowid.path, by_rowid.rel_path, by_rowid.format) == ("/f/a.md", "a.md", "markdown")
    assert (by_rowid.source_id, by_rowid.source_name, by_rowid.source_kind) == (src.id, "docs", "folder")


def test_a_batch_that_writes_a_document_twice_keeps_only_its_last_version(store: Store) -> None:
    """The SQLite store writes a batch's FTS5 rows last: a chunk the batch itself replaces must not keep one."""
    src = store.add_source("folder", "/f", "/f")
    store.replace_documents(
        src.id,
        [
            (_doc("/f/a.md"), [_chunk(1, "alpha beta"), _chunk(2, "gamma")]),
            (_doc("/f/b.md"), [_chunk(1, "epsilon")]),
            (_doc("/f/a.md", "y"), [_chunk(3, "delta")]),
        ],
    )
    assert store.keyword_search(["alpha"], 5) == store.keyword_search(["gamma"], 5) == []
    assert len(store.keyword_search(["delta"], 5)) == len(store.keyword_search(["epsilon"], 5)) == 1
    assert _count(store, "chunks") == 2
    if isinstance(store, SQLiteStore):
        assert _count(store, "chunks_fts") == 2
        store._conn().execute("INSERT INTO chunks_fts (chunks_fts) VALUES ('integrity-check')")


def test_a_failed_batch_leaves_no_keyword_rows_behind(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "index.sqlite3")
    src = store.add_source("folder", "/f", "/f")
    broken = DocumentRecord("/f/c.md", "c.md", "markdown", 1, 1, "x", "no such status")
    with pytest.raises(sqlite3.IntegrityError):
        store.replace_documents(
            src.id, [(_doc("/f/a.md"), [_chunk(1, "alpha")]), (broken, [_chunk(2, "beta")])]
        )
    store.replace_document(src.id, _doc("/f/b.md"), [_chunk(3, "gamma")])
    assert store.keyword_search(["alpha"], 5) == []
    assert len(store.keyword_search(["gamma"], 5)) == 1
    assert _count(store, "chunks") == _count(store, "chunks_fts") == 1


def test_removing_a_source_purges_documents_chunks_and_keyword_rows(store: Store) -> None:
    src = store.add_source("folder", "/f", "/f")
    store.replace_document(src.id, _doc("/f/a.md"), [_chunk(1, "alpha")])
    store.remove_source(src.id)
    keyword_table = "chunks_fts" if isinstance(store, SQLiteStore) else "postings"
    for table in ("documents", "chunks", keyword_table):
        assert _count(store, table) == 0


def test_duplicate_source_is_a_clear_error(store: Store) -> None:
    store.add_source("folder", "/f", "/f")
    with pytest.raises(StoreError, match="already registered"):
        store.add_source("folder", "/f", "/f")


def test_bm25_scores_are_the_same_on_both_backends(tmp_path: Path, pg_url: str) -> None:
    texts = [
        ("Install", "pip install citedocs then run citedocs serve"),
        ("Search", "hybrid search fuses keyword and semantic rankings with BM25"),
        ("Keyword", "keyword keyword search uses BM25 over analysed terms"),
        ("Config", "set CITEDOCS_DB to a postgresql URL to share one index"),
        ("Long", "search " + "filler words about nothing in particular " * 30),
    ]
    stores = [open_store(str(tmp_path / "i.db")), open_store(pg_url)]
    for store in stores:
        src = store.add_source("folder", "/f", "/f")
        for n, (heading, text) in enumerate(texts):
            store.replace_document(src.id, _doc(f"/f/{n}.md"), [_chunk(n, text, heading)])
    for query in (["search"], ["keyword", "bm25"], ["citedoc", "index"], ["absent"]):
        sqlite_hits, pg_hits = (s.keyword_search(query, 10) for s in stores)
        assert [r for r, _ in sqlite_hits] == [r for r, _ in pg_hits], query
        assert [round(s, 9) for _, s in sqlite_hits] == [round(s, 9) for _, s in pg_hits], query
    assert stores[0].term_document_counts(["search", "nope"]) == stores[1].term_document_counts(
        ["search", "nope"]
    )


def test_keyword_filters_by_source_and_format(store: Store) -> None:
    a = store.add_source("folder", "/a", "/a")
    b = store.add_source("folder", "/b", "/b")
    store.replace_document(a.id, _doc("/a/x.md"), [_chunk(1, "shared word here")])
    store.replace_document(
        b.id,
        DocumentRecord("/b/y.pdf", "y.pdf", "pdf", 1, 1, "s", "indexed"),
        [_chunk(2, "shared word there")],
    )
    rowids = {store.chunks_by_rowid([r])[r].source_id for r, _ in store.keyword_search(["share"], 5)}
    assert rowids == {a.id, b.id}
    only_b = store.keyword_search(["share"], 5, source_ids=[b.id])
    assert [store.chunks_by_rowid([r])[r].path for r, _ in only_b] == ["/b/y.pdf"]
    assert [
        store.chunks_by_rowid([r])[r].path
        for r, _ in store.keyword_search(["share"], 5, formats=["markdown"])
    ] == ["/a/x.md"]


def test_format_counts_name_the_indexed_file_types(store: Store) -> None:
    a = store.add_source("folder", "/a", "/a")
    store.replace_document(a.id, _doc("/a/x.md"), [_chunk(1, "one")])
    store.replace_document(a.id, _doc("/a/z.md", sha="z"), [_chunk(3, "three")])
    store.replace_document(a.id, DocumentRecord("/a/y.pdf", "y.pdf", "pdf", 1, 1, "s", "failed"), [])
    assert store.format_counts() == {"markdown": 2}  # a failed file is no type to filter by


def test_vectors_are_stored_counted_searched_and_cleared(store: Store) -> None:
    src = store.add_source("folder", "/f", "/f")
    store.replace_document(src.id, _doc("/f/a.md"), [_chunk(n, f"text {n}") for n in range(6)])
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(6, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    store.put_vectors([(f"sha{n}", to_blob(v)) for n, v in enumerate(vectors[:5])])
    search = VectorSearch(store)
    assert search.counts == (5, 6)
    assert search.top_k(vectors[0], 1)
    rowids = store.document_rowids(store.documents(src.id)["/f/a.md"].id or 0)
    by_sha = {store.chunks_by_rowid([r])[r].sha256: r for r in rowids}
    best = search.top_k(vectors[3], 3)
    assert best[0][0] == by_sha["sha3"] and best[0][1] == pytest.approx(1.0, abs=1e-5)
    assert [s for _, s in best] == sorted((s for _, s in best), reverse=True)
    assert np.frombuffer(store.vectors_for_rowids([by_sha["sha2"]])[0], "<f4") == pytest.approx(vectors[2])
    assert search.top_k(vectors[3], 3, formats=["pdf"]) == []
    assert search.top_k(vectors[3], 1, source_ids=[src.id])[0][0] == by_sha["sha3"]
    store.clear_vectors()
    assert store.vector_counts() == (0, 6)


def test_another_instance_sees_changes_through_the_generation(store: Store, backend_db: str) -> None:
    src = store.add_source("folder", "/f", "/f")
    _, gen = store.changed_since(store.generation)
    other = open_store(backend_db)  # another process's view of the same index
    assert not other.changed_since(gen)[0]
    store.replace_document(src.id, _doc("/f/a.md"), [_chunk(1, "alpha")])
    assert other.changed_since(gen)[0]
    assert len(other.keyword_search(["alpha"], 5)) == 1


def test_readers_are_not_blocked_by_an_open_write(store: Store, backend_db: str) -> None:
    src = store.add_source("folder", "/f", "/f")
    store.replace_document(src.id, _doc("/f/a.md"), [_chunk(1, "alpha")])
    reader = open_store(backend_db)
    in_write, release = threading.Event(), threading.Event()

    def writer() -> None:
        with store.transaction() as conn:
            conn.execute("DELETE FROM chunks")
            in_write.set()
            release.wait(10)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert in_write.wait(10)
        started = time.monotonic()
        assert len(reader.keyword_search(["alpha"], 5)) == 1  # the committed state, at once
        assert time.monotonic() - started < 5
    finally:
        release.set()
        thread.join()
    assert reader.keyword_search(["alpha"], 5) == []


def test_concurrent_writers_from_two_instances_both_land(store: Store, backend_db: str) -> None:
    src = store.add_source("folder", "/f", "/f")
    other = open_store(backend_db)

    def write(target: Store, prefix: str) -> None:
        for n in range(15):
            target.replace_document(src.id, _doc(f"/f/{prefix}{n}.md"), [_chunk(n, f"{prefix} words {n}")])

    threads = [threading.Thread(target=write, args=(s, p)) for s, p in ((store, "a"), (other, "b"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert store.counts()["documents"] == 30 and store.counts()["chunks"] == 30
    assert len(store.keyword_search(["word"], 50)) == 30


def test_jobs_record_progress_and_a_rerun_marks_the_old_one_interrupted(store: Store) -> None:
    src = store.add_source("folder", "/f", "/f")
    first = store.start_job(src.id, "index", total=3)
    store.update_job(first, done=2, current="/f/b.md")
    second = store.start_job(src.id, "index")
    none_source = store.start_job(None, "embed")
    jobs = {j.id: j for j in store.recent_jobs()}
    assert jobs[first].state == "interrupted" and jobs[first].done == 2
    assert jobs[second].state == "running" and jobs[none_source].source_id is None


def test_site_tables_work_on_both_backends(store: Store) -> None:
    src = store.add_source("site", "docs.example", "https://docs.example/llms.txt")
    tables = SiteTables(store)
    links = [
        DocLink("A", "https://docs.example/a.md", "about a", "Docs", False),
        DocLink("A again", "https://docs.example/a.md"),
        DocLink("B", "https://docs.example/b.md"),
    ]
    tables.record_fetch(src.id, etag='"e1"', last_modified=None, sha256="s", fetched_at=1.0, links=links)
    assert [link.url for link in tables.links(src.id)] == [
        "https://docs.example/a.md",
        "https://docs.example/b.md",
    ]
    assert tables.state(src.id).revision == 1 and tables.state(src.id).etag == '"e1"'
    page = StoredPage("https://docs.example/a.md", "A", "text/markdown", None, None, "h1", 2.0, False, "# A")
    tables.put_page(src.id, page)
    tables.put_page(
        src.id, StoredPage(**{**{f: getattr(page, f) for f in page.__slots__}, "markdown": "# A2"})
    )
    assert tables.page(src.id, page.url).markdown == "# A2"  # type: ignore[union-attr]
    assert tables.counts() == {src.id: (2, 1)}
    assert tables.sources_listing(page.url) == [src.id]
    store.remove_source(src.id)
    assert tables.counts() == {} and tables.links(src.id) == []


def test_a_newer_schema_is_refused(store: Store, backend_db: str) -> None:
    store.close()
    if is_postgres(backend_db):
        other = open_store(backend_db)
        with other.transaction() as conn:
            conn.execute("INSERT INTO citedocs_schema (version) VALUES (999)")
        other.close()
    else:
        conn = sqlite3.connect(backend_db)
        conn.execute("PRAGMA user_version = 999")
        conn.close()
    with pytest.raises(StoreError, match="newer citedocs"):
        open_store(backend_db)


def test_a_file_that_is_not_a_database_is_refused_clearly(tmp_path: Path) -> None:
    bad = tmp_path / "not.db"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="--db"):
        SQLiteStore(bad)


def test_an_unreachable_postgres_is_a_clear_error_without_the_password(tmp_path: Path) -> None:
    url = f"postgresql://user:s3cret@/db?host={tmp_path}&port=1"
    with pytest.raises(StoreError) as info:
        open_store(url)
    assert "s3cret" not in str(info.value) and "s3cret" not in info.value.hint
    assert "CITEDOCS_DB" in info.value.hint


def test_one_indexer_per_source_on_postgres(pg_url: str) -> None:
    store, other = open_store(pg_url), open_store(pg_url)
    src = store.add_source("folder", "/f", "/f")
    with store.source_lock(src.id):
        with pytest.raises(StoreError, match="Another process is indexing"), other.source_lock(src.id):
            pass
        with other.source_lock(src.id + 1):  # another source is free
            pass
    with other.source_lock(src.id):  # released when the first indexer finished
        pass


def test_a_second_indexer_waits_for_the_first_then_runs(pg_url: str, tmp_path: Path) -> None:
    """`citedocs add` beside another process indexing the folder (a replica's watcher, the compose index job run
    again) waits its turn and then indexes, rather than failing."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Backups\n\nNightly backups rotate after fourteen days.\n", encoding="utf-8")
    env = {
        **os.environ,
        "CITEDOCS_DB": pg_url,
        "CITEDOCS_EMBEDDER": "none",
        "CITEDOCS_CONFIG": str(tmp_path / "no"),
    }
    cli = [str(Path(sys.executable).parent / "citedocs"), "add", str(docs)]
    assert subprocess.run(cli, env=env, capture_output=True, timeout=120, check=False).returncode == 0
    (docs / "b.md").write_text("# Certificates\n\nCertificates renew thirty days early.\n", encoding="utf-8")
    store = open_store(pg_url)
    [src] = store.list_sources("folder")
    with store.source_lock(src.id):
        adding = subprocess.Popen(cli, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(2.0)
        assert adding.poll() is None, "the second indexer did not wait"
    _out, err = adding.communicate(timeout=120)
    assert adding.returncode == 0, err
    assert f"Another process is indexing {str(docs.resolve())!r} right now; waiting for it" in err, err
    assert store.list_sources("folder")[0].id == src.id
    assert {Path(path).name for path in store.documents(src.id)} == {"a.md", "b.md"}


def test_a_source_lock_waits_only_as_long_as_asked(pg_url: str) -> None:
    store, other = open_store(pg_url), open_store(pg_url)
    src = store.add_source("folder", "/f", "/f")
    with store.source_lock(src.id):
        started = time.monotonic()
        with (
            pytest.raises(StoreError, match="Another process is indexing"),
            other.source_lock(src.id, wait=0.5),
        ):
            pass
        assert 0.4 < time.monotonic() - started < 3.0


def test_a_running_index_job_is_alive_while_its_source_lock_is_held(pg_url: str) -> None:
    store, other = open_store(pg_url), open_store(pg_url)
    src = store.add_source("folder", "/f", "/f")
    job_id = store.start_job(src.id, "index")
    [job] = [j for j in other.recent_jobs() if j.id == job_id]
    assert not other.job_alive(job)  # no indexer holds the source: it was interrupted
    with store.source_lock(src.id):
        assert other.job_alive(job)  # seen from another process, whatever its pid table says
    assert not other.job_alive(job)


def test_postgres_builds_an_hnsw_index_after_an_embedding_pass_and_uses_it(pg_url: str) -> None:
    store = open_store(pg_url)
    src = store.add_source("folder", "/f", "/f")
    store.replace_document(src.id, _doc("/f/a.md"), [_chunk(n, f"text {n}") for n in range(50)])
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(50, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    store.put_vectors([(f"sha{n}", to_blob(v)) for n, v in enumerate(vectors)])
    exact = store.nearest(vectors[7], 5)  # no index yet: an exact scan
    store.index_vectors(8)
    conn = store._conn()
    assert conn.execute("SELECT 1 FROM pg_indexes WHERE indexname = 'embeddings_hnsw_8'").fetchone()
    conn.execute("SET enable_seqscan = off")  # 50 rows: make the planner show it can use the index
    text = "[" + ",".join(str(float(x)) for x in vectors[7]) + "]"
    plan = " ".join(
        r[0]
        for r in conn.execute(
            "EXPLAIN SELECT sha256 FROM embeddings ORDER BY (vec::vector(8)) <#> CAST(? AS vector(8)) LIMIT 5",
            (text,),
        ).fetchall()
    )
    assert "embeddings_hnsw_8" in plan
    assert store.nearest(vectors[7], 5)[0][0] == exact[0][0]


def test_a_dropped_postgres_connection_is_a_clear_error_then_reconnects(pg_url: str) -> None:
    import psycopg

    store = open_store(pg_url)
    src = store.add_source("folder", "/f", "/f")
    store.replace_document(src.id, _doc("/f/a.md"), [_chunk(1, "alpha")])
    with psycopg.connect(pg_url, autocommit=True) as admin:  # what a server restart or a failover does
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    with pytest.raises(StoreError) as info:
        store.keyword_search(["alpha"], 5)
    assert "Lost the connection" in info.value.message and "reconnects" in info.value.hint
    assert len(store.keyword_search(["alpha"], 5)) == 1  # the next request has a new connection
    store.replace_document(src.id, _doc("/f/b.md"), [_chunk(2, "alpha beta")])
    assert len(store.keyword_search(["alpha"], 5)) == 2
