"""Registered folders: walking them and confining every read to them.

Both go through a pinned `FolderHandle` (see `confined.py`): the walk lists each directory from its own
descriptor and every file is opened component by component without the kernel following a link, so a link or
a `../` that leaves a registered folder is refused, whatever the spelling and whatever changes on disk meanwhile.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import re
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from citedocs.errors import AccessDenied, NotFoundError
from citedocs.sources.confined import (
    _DIR_FLAGS,
    FolderHandle,
    Identity,
    Opened,
    Refusal,
    kind_of,
    outside,
    size_cap_problem,
)
from citedocs.sources.secrets import SECRET_DIR_NAMES, secret_folder_problem

DEFAULT_IGNORED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".bzr",
        "node_modules",
        "bower_components",
        ".venv",
        "venv",
        ".env",
        "env",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".nox",
        ".cache",
        ".ipynb_checkpoints",
        ".idea",
        ".vscode",
        ".next",
        ".nuxt",
        ".gradle",
        ".terraform",
        "site-packages",
    }
    | SECRET_DIR_NAMES
)
MAX_DEPTH = 100  # each level holds a descriptor while its subfolders are walked
# Editors' swap, lock, backup and atomic-save files (vim, emacs, JetBrains, gedit, Kate, LibreOffice, MS Office)
# and partial downloads: never documents, and the folder watcher sees them come and go on every save.
EDITOR_TEMP_FILES = (
    "*.swp",
    "*.swo",
    "*.swx",
    ".*.sw?",
    "*~",
    ".#*",
    "#*#",
    "4913",
    "*.tmp",
    "*.temp",
    "*.kate-swp",
    "*___jb_tmp___",
    "*___jb_old___",
    ".goutputstream-*",
    ".~lock.*#",
    "~$*",
    "*.crdownload",
    "*.part",
)
_EDITOR_TEMP = re.compile("|".join(fnmatch.translate(p) for p in EDITOR_TEMP_FILES))


def shown_name(name: str) -> str:
    """`name` as valid UTF-8 text: bytes the file system gave that are not UTF-8 (which Python holds as lone
    surrogates) are written `\\xNN`. The store, chunk ids and every display take this form."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape" if _escaped_only(name) else "surrogatepass").decode(
            "utf-8", "backslashreplace"
        )
    return name


def _escaped_only(name: str) -> bool:
    return all(not 0xD800 <= ord(ch) <= 0xDFFF or 0xDC80 <= ord(ch) <= 0xDCFF for ch in name)


def bad_name_problem(kind: str) -> str:
    return (
        f"this {kind}'s name is not valid UTF-8 (shown with \\xNN for its bytes); rename it "
        "(e.g. `convmv` or your file manager) and it is indexed"
    )


def editor_temp_file(name: str) -> bool:
    """Whether a file name is an editor's swap/lock/backup file or a partial download (never indexed)."""
    return _EDITOR_TEMP.match(name) is not None


@dataclass(frozen=True, slots=True)
class FoundFile:
    path: Path  # absolute, as found under the folder (not resolved through links)
    rel_path: str  # POSIX-style, relative to the folder
    size: int
    mtime_ns: int
    problem: str | None = None  # set when the file must be recorded as failed without reading it
    identity: Identity | None = None  # (device, inode) as listed; the read must open this same file


def matches(rel_path: str, patterns: Sequence[str]) -> bool:
    """A pattern without '/' matches the file name; one with '/' matches the whole relative path."""
    name = rel_path.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatch(rel_path if "/" in p else name, p) for p in patterns)


@dataclass(frozen=True, slots=True)
class _Rules:
    include: Sequence[str]
    exclude: Sequence[str]
    ignored_dirs: frozenset[str]
    max_bytes: int | None
    supported: frozenset[str] | None

    def wanted(self, rel: str, name: str) -> bool:
        if editor_temp_file(name):
            return False
        if self.include and not matches(rel, self.include):
            return False
        if self.exclude and matches(rel, self.exclude):
            return False
        return self.supported is None or _supported(name, self.supported)


def walk_folder(
    root: Path | FolderHandle,
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    ignored_dirs: frozenset[str] = DEFAULT_IGNORED_DIRS,
    max_bytes: int | None = None,
    supported: frozenset[str] | None = None,
) -> Iterator[FoundFile]:
    """Every candidate file under `root`, in a stable order. Links that leave the folder, files that are not
    regular (FIFOs, sockets, devices), oversized files and folders that cannot be listed come with a
    `problem`, so they are recorded as failed rather than skipped in silence."""
    rules = _Rules(include, exclude, ignored_dirs, max_bytes, supported)
    if isinstance(root, FolderHandle):
        yield from _walk(root, root.fd, "", rules, 0)
        return
    with FolderHandle.pin(root.resolve(strict=True)) as handle:
        for found in _walk(handle, handle.fd, "", rules, 0):
            yield FoundFile(root / found.rel_path, *_fields(found))


def _fields(found: FoundFile) -> tuple[str, int, int, str | None, Identity | None]:
    return found.rel_path, found.size, found.mtime_ns, found.problem, found.identity


def _walk(handle: FolderHandle, dir_fd: int, prefix: str, rules: _Rules, depth: int) -> Iterator[FoundFile]:
    try:
        with os.scandir(dir_fd) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        yield _dir_problem(
            handle, prefix, f"cannot list this folder ({exc.strerror}); its files are not indexed"
        )
        return
    subdirs = []
    for entry in entries:
        rel = prefix + entry.name
        if shown_name(entry.name) != entry.name:  # never passed on: no store, id or terminal takes it
            yield from _bad_name(handle, rel, entry.is_dir(follow_symlinks=False), rules)
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError as exc:
            if rules.wanted(rel, entry.name):
                yield FoundFile(handle.path / rel, rel, 0, 0, f"cannot read: {exc.strerror}")
            continue
        if stat.S_ISDIR(info.st_mode):
            if entry.name not in rules.ignored_dirs:
                subdirs.append((entry.name, info))
            continue
        if not rules.wanted(rel, entry.name):
            continue
        if stat.S_ISLNK(info.st_mode):
            found = _through_link(handle, rel, rules.max_bytes)
            if found is not None:
                yield found
            continue
        yield _found(handle, rel, info, rules.max_bytes)
    for name, info in subdirs:
        rel = prefix + name
        if depth >= MAX_DEPTH:
            yield _dir_problem(handle, rel + "/", f"nested deeper than {MAX_DEPTH} folders; not indexed")
            continue
        try:
            sub_fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
        except OSError as exc:
            yield _dir_problem(
                handle, rel + "/", f"cannot open this folder ({exc.strerror}); its files are not indexed"
            )
            continue
        try:
            if not os.path.samestat(info, os.fstat(sub_fd)):
                yield _dir_problem(handle, rel + "/", "replaced while being listed; run `citedocs reindex`")
                continue
            yield from _walk(handle, sub_fd, rel + "/", rules, depth + 1)
        finally:
            os.close(sub_fd)


def scan_paths(
    handle: FolderHandle,
    rels: Sequence[str],
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    ignored_dirs: frozenset[str] = DEFAULT_IGNORED_DIRS,
    max_bytes: int | None = None,
    supported: frozenset[str] | None = None,
) -> Iterator[FoundFile]:
    """What `walk_folder` would list at each of `rels` (a file, or a folder and everything below it), by the
    same rules: a path that is gone, unwanted, or under an ignored folder or a link to a folder lists nothing.
    The folder watcher rescans only what changed with it."""
    rules = _Rules(include, exclude, ignored_dirs, max_bytes, supported)
    for rel in rels:
        parts = [p for p in rel.split("/") if p not in ("", ".")]
        if not parts or ".." in parts or any(p in ignored_dirs for p in parts[:-1]):
            continue
        yield from _scan_one(handle, parts, rules)


def _bad_name(handle: FolderHandle, rel: str, is_dir: bool, rules: _Rules) -> Iterator[FoundFile]:
    shown = shown_name(rel)
    if is_dir:
        yield _dir_problem(handle, shown + "/", bad_name_problem("folder") + "; its files are not indexed")
    elif rules.wanted(shown, shown.rsplit("/", 1)[-1]):
        yield FoundFile(handle.path / shown, shown, 0, 0, bad_name_problem("file"))


def _scan_one(handle: FolderHandle, parts: list[str], rules: _Rules) -> Iterator[FoundFile]:
    bad = next((i for i, part in enumerate(parts) if shown_name(part) != part), None)
    if bad is not None:  # as the walk lists it: the first folder or the file whose name is not UTF-8
        path = os.path.join(handle.path, *parts[: bad + 1])
        if os.path.lexists(path):
            yield from _bad_name(handle, "/".join(parts[: bad + 1]), os.path.isdir(path), rules)
        return
    held: list[int] = []
    try:
        for name in parts[:-1]:  # folders are entered without following links, as the walk does
            try:
                held.append(os.open(name, _DIR_FLAGS, dir_fd=held[-1] if held else handle.fd))
            except OSError as exc:
                if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
                    return
                raise
        parent = held[-1] if held else handle.fd
        name, rel = parts[-1], "/".join(parts)
        try:
            info = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ENOTDIR):
                return
            raise
        if stat.S_ISDIR(info.st_mode):
            if name in rules.ignored_dirs or len(parts) > MAX_DEPTH:
                return
            sub_fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
            try:
                if os.path.samestat(info, os.fstat(sub_fd)):
                    yield from _walk(handle, sub_fd, rel + "/", rules, len(parts))
            finally:
                os.close(sub_fd)
        elif rules.wanted(rel, name):
            if stat.S_ISLNK(info.st_mode):
                found = _through_link(handle, rel, rules.max_bytes)
                if found is not None:
                    yield found
            else:
                yield _found(handle, rel, info, rules.max_bytes)
    finally:
        for fd in held:
            os.close(fd)


def _dir_problem(handle: FolderHandle, rel: str, why: str) -> FoundFile:
    rel = rel or "./"
    return FoundFile(handle.path / rel, rel, 0, 0, why)


def _found(handle: FolderHandle, rel: str, info: os.stat_result, max_bytes: int | None) -> FoundFile:
    path = handle.path / rel
    if not stat.S_ISREG(info.st_mode):
        return FoundFile(path, rel, 0, 0, f"{kind_of(info.st_mode)}, not a regular file; not read")
    problem = None
    if max_bytes is not None and info.st_size > max_bytes:
        problem = size_cap_problem(info.st_size, max_bytes)
    return FoundFile(path, rel, info.st_size, info.st_mtime_ns, problem, (info.st_dev, info.st_ino))


def _through_link(handle: FolderHandle, rel: str, max_bytes: int | None) -> FoundFile | None:
    """A symlink is listed as the file it leads to when that file is inside the folder."""
    path = handle.path / rel
    opened = handle.lookup(rel)
    if isinstance(opened, Refusal):
        if opened.kind == "outside":
            return FoundFile(path, rel, 0, 0, "a symlink that leaves the registered folder; not read")
        if opened.kind == "not-a-file":
            if stat.S_ISDIR(opened.mode):
                return None  # links to folders are not followed
            return FoundFile(
                path, rel, 0, 0, f"a symlink to {kind_of(opened.mode)}, not a regular file; not read"
            )
        return FoundFile(path, rel, 0, 0, f"cannot read: {opened.error.message}")
    os.close(opened.fd)
    return _found(handle, rel, opened.stat, max_bytes)


def _supported(name: str, supported: frozenset[str]) -> bool:
    suffix = Path(name).suffix.lower()
    return suffix in supported or name in supported


# -- reads --------------------------------------------------------------------------------------------
def _attempts(path: str, folders: Sequence[Path]) -> list[tuple[Path, str]]:
    """(folder, path inside it) pairs to try: by spelling first, else where the kernel says it is."""
    candidate = Path(path).expanduser()
    if not candidate.is_absolute():
        return [(folder, candidate.as_posix()) for folder in folders]
    for folder in folders:
        if candidate.is_relative_to(folder):
            return [(folder, candidate.relative_to(folder).as_posix())]
    try:  # reached through another spelling (a link to the folder): find which, then open it ourselves
        real = candidate.resolve(strict=True)
    except (OSError, RuntimeError):
        return []
    return [(f, real.relative_to(f).as_posix()) for f in folders if real.is_relative_to(f)]


def open_confined(
    path: str, folders: Sequence[Path], pin: Callable[[Path], FolderHandle]
) -> tuple[Path, Opened]:
    """Open `path` as a regular file inside one of `folders` (pinned by `pin`); the caller closes the fd."""
    if not folders:
        raise AccessDenied("No folder is registered.", "Register one with `citedocs add PATH` first.")
    attempts = _attempts(path, folders)
    escaped = False
    refused: AccessDenied | NotFoundError | None = None
    for folder, rel in attempts:
        try:
            handle = pin(folder)
        except (AccessDenied, NotFoundError) as exc:  # that folder moved or vanished; the others may hold it
            refused = exc
            continue
        with handle:
            found = handle.lookup(rel, path)
        if isinstance(found, Opened):
            return folder, found
        if found.kind == "outside":
            escaped = True
        elif found.kind != "missing":
            raise found.error
    if escaped or not attempts:
        raise outside(path)
    if refused is not None:
        raise refused
    raise NotFoundError(
        f"{path} does not exist in any registered folder.", "Check the path with `citedocs list`."
    )


def resolve_confined(path: str, folders: Sequence[Path]) -> tuple[Path, Path]:
    """(registered folder, real path of the file) for a file inside a registered folder, else an error."""
    folder, opened = open_confined(path, folders, FolderHandle.pin)
    os.close(opened.fd)
    return folder, folder.joinpath(*opened.rel_parts)


# -- registration ---------------------------------------------------------------------------------------
SYSTEM_TREES = tuple(
    Path(p)
    for p in (
        "/proc",
        "/sys",
        "/dev",
        "/run",
        "/boot",
        "/etc",
        "/var/run",
        "/var/lib",
        "/private/etc",
        "/System",
        "/Library",
    )
)
SYSTEM_ROOTS = tuple(
    Path(p)
    for p in (
        "/",
        "/usr",
        "/var",
        "/home",
        "/Users",
        "/root",
        "/opt",
        "/srv",
        "/mnt",
        "/media",
        "/tmp",
        "/bin",
        "/sbin",
        "/lib",
        "/lib64",
        "/private",
    )
)


def system_folder_problem(resolved: Path) -> str | None:
    """Why `resolved` is not a folder of documents to register (a system tree, the root, the home), or None."""
    if any(resolved == tree or resolved.is_relative_to(tree) for tree in SYSTEM_TREES):
        return f"{resolved} is a system folder"
    if resolved in SYSTEM_ROOTS:
        return f"{resolved} is a system root, not a folder of documents"
    try:
        home = Path.home().resolve()
    except (OSError, RuntimeError, KeyError):
        return secret_folder_problem(resolved, None)
    if resolved == home:
        return f"{resolved} is your whole home folder (keys, tokens and browser profiles live there)"
    return secret_folder_problem(resolved, home)
