from __future__ import annotations

import os
from pathlib import Path

import pytest

from citedocs.errors import AccessDenied, NotFoundError
from citedocs.sources.folders import matches, resolve_confined, walk_folder


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    (root / "node_modules").mkdir()
    (root / ".git").mkdir()
    (root / "a.md").write_text("# A\n", encoding="utf-8")
    (root / "sub" / "b.txt").write_text("b\n", encoding="utf-8")
    (root / "node_modules" / "c.md").write_text("c\n", encoding="utf-8")
    (root / ".git" / "d.md").write_text("d\n", encoding="utf-8")
    outside = tmp_path / "secret"
    outside.mkdir()
    (outside / "passwords.txt").write_text("hunter2\n", encoding="utf-8")
    return root, outside


def test_walk_skips_ignored_dirs_and_applies_globs(tree: tuple[Path, Path]) -> None:
    root, _ = tree
    assert [f.rel_path for f in walk_folder(root)] == ["a.md", "sub/b.txt"]
    assert [f.rel_path for f in walk_folder(root, include=["*.md"])] == ["a.md"]
    assert [f.rel_path for f in walk_folder(root, exclude=["sub/*"])] == ["a.md"]


def test_symlink_leaving_the_folder_is_flagged_not_read(tree: tuple[Path, Path]) -> None:
    root, outside = tree
    os.symlink(outside / "passwords.txt", root / "link.txt")
    os.symlink(outside, root / "linkdir")
    found = {f.rel_path: f for f in walk_folder(root)}
    assert "linkdir/passwords.txt" not in found
    assert found["link.txt"].problem and "leaves the registered folder" in found["link.txt"].problem


def test_size_cap_is_flagged_with_the_fix(tree: tuple[Path, Path]) -> None:
    root, _ = tree
    (root / "big.txt").write_bytes(b"x" * 3000)
    found = {f.rel_path: f for f in walk_folder(root, max_bytes=1000)}
    assert found["big.txt"].problem and "CITEDOCS_MAX_FILE_MB" in found["big.txt"].problem


@pytest.mark.parametrize(
    "attempt",
    [
        "{root}/../secret/passwords.txt",
        "{outside}/passwords.txt",
        "../secret/passwords.txt",
        "{root}/link.txt",
        "/etc/passwd",
    ],
)
def test_reads_outside_registered_folders_are_refused(tree: tuple[Path, Path], attempt: str) -> None:
    root, outside = tree
    os.symlink(outside / "passwords.txt", root / "link.txt")
    with pytest.raises(AccessDenied, match="outside every registered folder"):
        resolve_confined(attempt.format(root=root, outside=outside), [root])


def test_reads_inside_are_resolved(tree: tuple[Path, Path]) -> None:
    root, _ = tree
    assert resolve_confined(str(root / "sub" / ".." / "a.md"), [root])[1] == (root / "a.md").resolve()
    assert resolve_confined("sub/b.txt", [root])[1] == (root / "sub" / "b.txt").resolve()
    with pytest.raises(NotFoundError):
        resolve_confined(str(root / "missing.md"), [root])


def test_glob_matching_rules() -> None:
    assert matches("a/b/c.md", ["*.md"])
    assert matches("a/b/c.md", ["a/*"])
    assert not matches("a/b/c.md", ["b/*"])
