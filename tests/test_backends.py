"""The whole library (index, embed, keyword/semantic/hybrid search, find_similar, reindex) on PostgreSQL gives
what it gives on SQLite, with the packaged embedding model on the shipped sample docs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from citedocs.service import Citedocs
from citedocs.settings import Settings

REPO = Path(__file__).resolve().parents[1]
QUERIES = [
    "how do I install lumen",
    "which port does the daemon listen on",
    "restore a backup",
    "TLS certificate",
]


def _library(db: str, folder: Path) -> Citedocs:
    app = Citedocs(Settings(db=db, embedder="local"))
    app.add_folder(folder)
    app.index()
    app.embed()
    return app


def _ranked(app: Citedocs, query: str, mode: str) -> list[tuple[str, str]]:
    return [(hit.path, hit.heading) for hit in app.search(query, k=5, mode=mode).hits]


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    shutil.copytree(REPO / "examples" / "sample-docs", folder)
    return folder


@pytest.mark.slow
def test_every_search_mode_ranks_the_same_on_postgres_as_on_sqlite(
    tmp_path: Path, pg_url: str, docs: Path
) -> None:
    lite, pg = _library(str(tmp_path / "i.db"), docs), _library(pg_url, docs)
    try:
        assert lite.store.counts() == pg.store.counts() and pg.store.counts()["chunks"] > 20
        assert pg.store.vector_counts() == lite.store.vector_counts()
        for query in QUERIES:
            for mode in ("keyword", "semantic", "hybrid"):
                result = pg.search(query, k=5, mode=mode)
                assert result.mode == mode and result.note is None
                assert _ranked(pg, query, mode) == _ranked(lite, query, mode), (query, mode)
        install = str(docs / "install.md")
        assert [h.path for h in pg.find_similar(install).hits] == [
            h.path for h in lite.find_similar(install).hits
        ]
        assert pg.search("port", k=3, mode="hybrid", file_type="md").hits[0].path.endswith(".md")
    finally:
        lite.close()
        pg.close()


def test_a_change_indexed_by_one_process_is_searchable_from_another(pg_url: str, docs: Path) -> None:
    writer, reader = _library(pg_url, docs), Citedocs(Settings(db=pg_url, embedder="local"))
    try:
        assert reader.search("zeppelin mooring", k=3, mode="keyword").hits == []
        (docs / "airships.md").write_text("# Airships\n\nThe zeppelin mooring mast is on the roof.\n")
        writer.index()
        writer.embed()
        for mode in ("keyword", "hybrid"):
            hits = reader.search("zeppelin mooring", k=3, mode=mode).hits
            assert hits and hits[0].path.endswith("airships.md"), mode
    finally:
        writer.close()
        reader.close()
