"""The public API: what `import citedocs` offers, pinned so a rename is a decision (as httpx pins its own)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import citedocs

PUBLIC = [
    "AnswerEvent",
    "AnswerService",
    "Citedocs",
    "CitedocsError",
    "Hit",
    "PreparedAnswer",
    "ReadResult",
    "SearchResult",
    "Settings",
    "SourceInfo",
    "__version__",
]


def test_all_is_sorted_and_pinned() -> None:
    assert citedocs.__all__ == sorted(citedocs.__all__) == PUBLIC


@pytest.mark.parametrize("name", [n for n in PUBLIC if n != "__version__"])
def test_every_public_name_resolves_to_the_library_object(name: str) -> None:
    value = getattr(citedocs, name)
    assert value.__name__ == name and value.__module__.startswith("citedocs.")


def test_unknown_names_raise_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        citedocs.nothing_here  # noqa: B018


def test_version_comes_from_the_package_metadata() -> None:
    from importlib import metadata

    assert citedocs.__version__ == metadata.version("citedocs")


def test_importing_the_package_loads_nothing_heavy() -> None:
    code = "import sys, citedocs; print(sorted(m for m in sys.modules if m.startswith(('citedocs.', 'numpy', 'fastapi', 'mcp'))))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


def test_the_facade_answers_through_the_public_names(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "ports.md").write_text("# Ports\n\nThe metrics endpoint listens on port 9464.\n")
    settings = citedocs.Settings(db=str(tmp_path / "index.sqlite3"), embedder="none")
    app = citedocs.Citedocs(settings)
    try:
        app.add_folder(tmp_path / "docs")
        app.index()
        result = app.search("metrics port", mode="keyword")
        assert isinstance(result, citedocs.SearchResult)
        assert isinstance(result.hits[0], citedocs.Hit) and result.hits[0].path.endswith("ports.md")
        with pytest.raises(citedocs.CitedocsError):
            app.read(str(tmp_path / "elsewhere.md"))
    finally:
        app.close()


def test_tests_never_see_the_users_environment(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import os

    assert not [
        n
        for n in os.environ
        if n.startswith("CITEDOCS_") and n not in ("CITEDOCS_CONFIG", "CITEDOCS_ENV_FILE")
    ]
    default = citedocs.Settings().db_path
    assert str(default).startswith(os.environ["XDG_DATA_HOME"]) and not default.exists()


def test_citedocs_version_prints_the_package_version() -> None:
    from importlib import metadata

    proc = subprocess.run(
        [sys.executable, "-m", "citedocs", "--version"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0 and proc.stdout.strip() == f"citedocs {metadata.version('citedocs')}"
