"""Registered folders: walking them and confining every read to them.

Paths are resolved strictly (symlinks followed, `..` collapsed) before the containment check, so a link or
a `../` that leaves a registered folder is refused, whatever the spelling.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from citedocs.errors import AccessDenied, NotFoundError

DEFAULT_IGNORED_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", ".bzr", "node_modules", "bower_components", ".venv", "venv", ".env", "env",
        "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox", ".nox", ".cache", ".ipynb_checkpoints",
        ".idea", ".vscode", ".next", ".nuxt", ".gradle", ".terraform", "site-packages",
    }
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class FoundFile:
    path: Path  # absolute, as found under the folder (not resolved through links)
    rel_path: str  # POSIX-style, relative to the folder
    size: int
    mtime_ns: int
    problem: str | None = None  # set when the file must be recorded as failed without reading it


def matches(rel_path: str, patterns: Sequence[str]) -> bool:
    """A pattern without '/' matches the file name; one with '/' matches the whole relative path."""
    name = rel_path.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatch(rel_path if "/" in p else name, p) for p in patterns)


def walk_folder(
    root: Path,
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    ignored_dirs: frozenset[str] = DEFAULT_IGNORED_DIRS,
    max_bytes: int | None = None,
    supported: frozenset[str] | None = None,
) -> Iterator[FoundFile]:
    """Every candidate file under `root`, in a stable order; links that leave the folder are flagged."""
    root_resolved = root.resolve(strict=True)
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in ignored_dirs and not _is_link_outside(
            Path(dirpath, d), root_resolved))  # fmt: skip
        for name in sorted(filenames):
            path = Path(dirpath, name)
            rel = path.relative_to(root).as_posix()
            if include and not matches(rel, include):
                continue
            if exclude and matches(rel, exclude):
                continue
            if supported is not None and not _supported(path, supported):
                continue
            try:
                real = path.resolve(strict=True)
                stat = real.stat()
            except (OSError, RuntimeError) as exc:
                yield FoundFile(path, rel, 0, 0, problem=f"cannot read: {exc}")
                continue
            if not real.is_relative_to(root_resolved):
                yield FoundFile(
                    path, rel, 0, 0, problem="a symlink that leaves the registered folder; not read"
                )
                continue
            if not real.is_file():
                continue
            problem = None
            if max_bytes is not None and stat.st_size > max_bytes:
                problem = (
                    f"larger than the {max_bytes / 1_048_576:g} MB cap ({stat.st_size / 1_048_576:.1f} MB); "
                    "raise CITEDOCS_MAX_FILE_MB to index it"
                )
            yield FoundFile(path, rel, stat.st_size, stat.st_mtime_ns, problem)


def _is_link_outside(path: Path, root: Path) -> bool:
    if not path.is_symlink():
        return False
    try:
        return not path.resolve(strict=True).is_relative_to(root)
    except (OSError, RuntimeError):
        return True


def _supported(path: Path, supported: frozenset[str]) -> bool:
    suffix = path.suffix.lower()
    return suffix in supported or path.name in supported


def resolve_confined(path: str, folders: Sequence[Path]) -> tuple[Path, Path]:
    """(registered folder, resolved file) for a path that lies inside a registered folder, else an error."""
    if not folders:
        raise AccessDenied("No folder is registered.", "Register one with `citedocs add PATH` first.")
    candidate = Path(path).expanduser()
    tries = [candidate] if candidate.is_absolute() else [folder / candidate for folder in folders]
    refused: Path | None = None
    for attempt in tries:
        try:
            resolved = attempt.resolve(strict=True)
        except (OSError, RuntimeError):
            continue
        for folder in folders:
            if resolved.is_relative_to(folder.resolve()):
                return folder, resolved
        refused = resolved
    lexically_inside = any(
        Path(os.path.normpath(attempt)).is_relative_to(folder) or Path(os.path.normpath(attempt)).is_relative_to(
            folder.resolve())
        for attempt in tries for folder in folders
    )  # fmt: skip
    if refused is not None or not lexically_inside:
        raise AccessDenied(
            f"{path} is outside every registered folder.",
            "Only files inside folders added with `citedocs add` can be read; run `citedocs list` to see them.",
        )
    raise NotFoundError(
        f"{path} does not exist in any registered folder.", "Check the path with `citedocs list`."
    )
