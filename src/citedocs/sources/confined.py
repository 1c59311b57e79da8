"""A registered folder opened once, and every file under it opened through that handle, race-free.

The kernel never follows a link on our behalf: each path component is opened with `O_NOFOLLOW` relative to
the directory descriptor of its parent, `..` pops back to a descriptor already held, and a symlink is read
(`readlink`) and spliced in by us, so a link that leaves the folder is refused whatever happens on disk
between two system calls. What is read is the object that was opened and checked (`fstat`), never a path
opened again. FIFOs, sockets and devices are opened non-blocking and refused.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import Literal

from citedocs.errors import AccessDenied, NotFoundError, ParseError

MAX_LINKS = 40  # as the kernel's own limit for one lookup
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK

Identity = tuple[int, int]  # (st_dev, st_ino)
_NOT_A_FILE = "Pass the path of a file inside a registered folder."


RefusalKind = Literal["outside", "not-a-file", "missing", "denied"]


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a path was not opened: `kind` for the walk and the indexer, `error` for the user."""

    kind: RefusalKind
    error: AccessDenied | NotFoundError
    mode: int = 0  # the file type found, for "not-a-file"


class _Refused(Exception):
    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.error.message)
        self.refusal = refusal


def outside(path: str) -> AccessDenied:
    return AccessDenied(
        f"{path} is outside every registered folder.",
        "Only files inside folders added with `citedocs add` can be read; run `citedocs list` to see them.",
    )


def _outside(shown: str) -> _Refused:
    return _Refused(Refusal("outside", outside(shown)))


def _not_a_file(shown: str, mode: int) -> _Refused:
    error = AccessDenied(f"{shown} is {kind_of(mode)}, not a file; it is not read.", _NOT_A_FILE)
    return _Refused(Refusal("not-a-file", error, mode))


def kind_of(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a device"),
        (stat.S_ISBLK, "a device"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISLNK, "a symlink"),
    ):
        if test(mode):
            return name
    return "not a regular file"


@dataclass(frozen=True, slots=True)
class Opened:
    """An open regular file inside the folder: its descriptor, its stat and its real path in the folder."""

    fd: int
    stat: os.stat_result
    rel_parts: tuple[str, ...]

    @property
    def identity(self) -> Identity:
        return self.stat.st_dev, self.stat.st_ino


class FolderHandle:
    """The directory descriptor of one registered folder; `path` is where it was registered (resolved)."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self.fd = fd
        info = os.fstat(fd)
        self.identity: Identity = (info.st_dev, info.st_ino)

    @classmethod
    def pin(cls, path: Path, expected: Identity | None = None) -> FolderHandle:
        """Open the folder; refuse it when the path is now a symlink or another folder than `expected`."""
        hint = f"If that is intended, run `citedocs remove {path}` then `citedocs add {path}` to register it again."
        try:
            fd = os.open(path, _DIR_FLAGS)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR) and path.is_symlink():
                raise AccessDenied(
                    f"The registered folder {path} has been replaced by a symlink to {os.readlink(path)}; "
                    "it is not followed.",
                    hint,
                ) from exc
            raise NotFoundError(
                f"The registered folder {path} cannot be opened ({exc.strerror}).",
                f"Restore it, or run `citedocs remove {path}` to unregister it.",
            ) from exc
        handle = cls(path, fd)
        if expected is not None and tuple(expected) != handle.identity:
            handle.close()
            raise AccessDenied(
                f"The registered folder {path} is now a different folder (device/inode {expected[0]}/"
                f"{expected[1]} when registered, {handle.identity[0]}/{handle.identity[1]} now); it is not read.",
                hint,
            )
        return handle

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> FolderHandle:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    # -- resolution -------------------------------------------------------------------------------
    def _inside(self, target: str, shown: str) -> list[str]:
        """The components of an absolute link target below this folder, else Escapes."""
        pure = PurePosixPath(target)
        if not pure.is_relative_to(self.path):
            raise _outside(shown)
        return list(pure.relative_to(self.path).parts)

    def open_file(self, rel: str | PurePosixPath, shown: str | None = None) -> Opened:
        """Open `rel` (relative to the folder) as a regular file, else AccessDenied or NotFoundError."""
        found = self.lookup(rel, shown)
        if isinstance(found, Refusal):
            raise found.error
        return found

    def lookup(self, rel: str | PurePosixPath, shown: str | None = None) -> Opened | Refusal:
        """Open `rel` (relative to the folder) as a regular file, or say why not; the caller closes the fd."""
        try:
            return self._open(rel, shown or str(rel))
        except _Refused as refused:
            return refused.refusal

    def _open(self, rel: str | PurePosixPath, shown: str) -> Opened:
        pending = list(reversed([p for p in PurePosixPath(rel).parts if p not in ("", ".", "/")]))
        held: list[int] = []
        names: list[str] = []
        links = 0
        try:
            while pending:
                name = pending.pop()
                if name in ("", "."):
                    continue
                if name == "..":
                    if not names:
                        raise _outside(shown)
                    names.pop()
                    os.close(held.pop())
                    continue
                parent = held[-1] if held else self.fd
                last = not pending
                try:
                    fd = os.open(name, _FILE_FLAGS if last else _DIR_FLAGS, dir_fd=parent)
                except OSError as exc:
                    if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.ENXIO, errno.EOPNOTSUPP):
                        raise _not_found(shown, exc) from exc
                    try:
                        target = os.readlink(name, dir_fd=parent)
                    except OSError:
                        target = None
                    if target is None:
                        if exc.errno == errno.ELOOP and links < MAX_LINKS:  # swapped back to a file meanwhile
                            links += 1
                            pending.append(name)
                            continue
                        if exc.errno in (errno.ENXIO, errno.EOPNOTSUPP):
                            raise _not_a_file(shown, stat.S_IFSOCK) from exc
                        raise _not_found(shown, exc) from exc
                    links += 1
                    if links > MAX_LINKS:
                        error = AccessDenied(f"{shown}: too many levels of symlinks.", _NOT_A_FILE)
                        raise _Refused(Refusal("denied", error)) from exc
                    if target.startswith("/"):
                        parts = self._inside(target, shown)
                        while held:
                            os.close(held.pop())
                        names.clear()
                    else:
                        parts = list(PurePosixPath(target).parts)
                    pending.extend(reversed(parts))
                    continue
                if last:
                    return _checked(fd, shown, (*names, name))
                held.append(fd)
                names.append(name)
            raise _not_a_file(shown, stat.S_IFDIR)
        finally:
            for fd in held:
                os.close(fd)

    def read(self, rel: str, max_bytes: int | None = None, expected: Identity | None = None) -> bytes:
        """The bytes of a regular file inside the folder, read from the descriptor that was checked."""
        opened = self.lookup(rel)
        if isinstance(opened, Refusal):
            if opened.kind == "outside":
                raise AccessDenied(f"{rel}: a symlink that leaves the registered folder; not read")
            raise opened.error
        try:
            if expected is not None and opened.identity != tuple(expected):
                raise ParseError(
                    f"{rel}: replaced while it was being indexed; not read",
                    "Run `citedocs reindex` once it stops changing.",
                )
            return read_capped(opened, max_bytes, rel)
        finally:
            os.close(opened.fd)


def _not_found(shown: str, exc: OSError) -> _Refused:
    if exc.errno in (errno.EACCES, errno.EPERM):
        denied = AccessDenied(f"{shown}: cannot read ({exc.strerror}).", "Check its permissions.")
        return _Refused(Refusal("denied", denied))
    missing = NotFoundError(
        f"{shown} does not exist in any registered folder.", "Check the path with `citedocs list`."
    )
    return _Refused(Refusal("missing", missing))


def _checked(fd: int, shown: str, parts: tuple[str, ...]) -> Opened:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise _not_a_file(shown, info.st_mode)
    return Opened(fd, info, parts)


def size_cap_problem(size: int, max_bytes: int) -> str:
    return (
        f"larger than the {max_bytes / 1_048_576:g} MB cap ({size / 1_048_576:.1f} MB); "
        "raise CITEDOCS_MAX_FILE_MB to index it"
    )


def read_capped(opened: Opened, max_bytes: int | None, name: str) -> bytes:
    """Read the whole file from its descriptor, refusing it (ParseError) once it passes `max_bytes`."""
    if max_bytes is not None and opened.stat.st_size > max_bytes:
        raise ParseError(f"{name}: {size_cap_problem(opened.stat.st_size, max_bytes)}")
    limit = None if max_bytes is None else max_bytes + 1
    pieces: list[bytes] = []
    total = 0
    while limit is None or total < limit:
        piece = os.read(opened.fd, 1 << 20 if limit is None else min(1 << 20, limit - total))
        if not piece:
            break
        pieces.append(piece)
        total += len(piece)
    if max_bytes is not None and total > max_bytes:
        raise ParseError(f"{name}: {size_cap_problem(total, max_bytes)} (it grew while being read)")
    return b"".join(pieces)
