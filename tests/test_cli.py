"""The CLI as a user runs it: a real subprocess, a real index file, JSON output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "examples" / "sample-docs"
HIT_FIELDS = {"path", "heading", "page", "line_start", "line_end", "score", "chunk_id", "snippet", "source"}


def cli(*args: str, db: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CITEDOCS_DB": str(db), "CITEDOCS_EMBEDDER": "none"}
    proc = subprocess.run(
        [sys.executable, "-m", "citedocs", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"citedocs {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
    return proc


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "index.db"
    cli("add", str(SAMPLES), db=path)
    return path


def test_samples_index_in_every_format(db: Path) -> None:
    [folder] = json.loads(cli("list", "--json", db=db).stdout)
    assert folder["path"] == str(SAMPLES.resolve()) and folder["status"] == "ready"
    assert folder["docs"] >= 10 and folder["failed"] == 0
    formats = {p.suffix for p in SAMPLES.iterdir()}
    assert {".md", ".txt", ".rst", ".html", ".pdf", ".docx", ".py", ".toml"} <= formats


def test_search_json_has_the_documented_fields(db: Path) -> None:
    hits = json.loads(cli("search", "metrics port", "--json", "-k", "3", db=db).stdout)["hits"]
    assert 1 <= len(hits) <= 3
    assert set(hits[0]) >= HIT_FIELDS
    assert "**" in hits[0]["snippet"]


def test_pdf_hits_carry_pages_and_type_filter_works(db: Path) -> None:
    hits = json.loads(cli("search", "release", "--type", "pdf", "--json", db=db).stdout)["hits"]
    assert hits and all(h["path"].endswith(".pdf") and h["page"] >= 1 for h in hits)


def test_read_a_hit_lines_and_refuse_outside(db: Path, tmp_path: Path) -> None:
    [hit] = json.loads(cli("search", "metrics port", "--json", "-k", "1", db=db).stdout)["hits"]
    read = json.loads(
        cli("read", f"{hit['path']}:{hit['line_start']}-{hit['line_end']}", "--json", db=db).stdout
    )
    assert read["start_line"] == hit["line_start"]
    assert read["text"].strip()
    secret = tmp_path / "secret.txt"
    secret.write_text("no", encoding="utf-8")
    refused = cli("read", str(secret), db=db, check=False)
    assert refused.returncode == 4
    assert "outside every registered folder" in refused.stderr and "citedocs add" in refused.stderr


def test_status_and_unknown_source_errors_say_what_to_do(db: Path) -> None:
    status = json.loads(cli("status", "--json", db=db).stdout)
    assert status["totals"]["indexed"] >= 10
    assert status["jobs"][0]["state"] == "done"
    missing = cli("remove", "/nope", db=db, check=False)
    assert missing.returncode == 3 and "citedocs list" in missing.stderr
    bad = cli("search", "x", "-k", "500", db=db, check=False)
    assert bad.returncode == 1 and "between 1 and 50" in bad.stderr


def test_reindex_no_change_and_remove(tmp_path: Path) -> None:
    db = tmp_path / "i.db"
    cli("add", str(SAMPLES), db=db)
    [report] = json.loads(cli("reindex", "--json", db=db).stdout)
    assert report["indexed"] == 0 and report["unchanged"] == report["total"]
    cli("remove", str(SAMPLES), db=db)
    assert json.loads(cli("list", "--json", db=db).stdout) == []
