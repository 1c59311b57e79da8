"""Which changed paths are ready to index: the watcher's debounce and settle rule, apart from any I/O but a stat.

A path is ready once the same `lstat` (size, mtime, inode, type, or "gone") has been seen at both ends of one
quiet window: a file written in pieces keeps changing and waits; a save (write a temporary file, rename it
over the old one) is seen once, finished. Beyond `cap` pending paths, individual paths are no longer kept:
the whole folder is rescanned once things are quiet, so a flood costs one stat walk, not a growing queue.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from citedocs.sources.folders import editor_temp_file

Observation = tuple[int, int, int, int] | None  # (size, mtime_ns, inode, file type), None once gone


def observe(path: str) -> Observation:
    """What a path looks like now, without following a final link and without reading it."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return info.st_size, info.st_mtime_ns, info.st_ino, stat.S_IFMT(info.st_mode)


def relevant(path: str, root: str, ignored_dirs: frozenset[str]) -> bool:
    """Whether an event's path can change what is indexed: inside `root`, under no ignored folder, and not an
    editor's swap or lock file."""
    if not path.startswith(root + os.sep):
        return False
    parts = path[len(root) + 1 :].split(os.sep)
    return not any(p in ignored_dirs for p in parts) and not editor_temp_file(parts[-1])


@dataclass(slots=True)
class Settle:
    """Pending paths, each with what it looked like when last seen changing (pure bookkeeping)."""

    window_s: float
    cap: int
    pending: dict[str, tuple[Observation, float]] = field(default_factory=dict)
    overflow: bool = False  # more than `cap` paths changed: rescan the folder instead
    quiet_since: float = 0.0  # when the last event arrived (the rescan waits for a quiet window too)
    # Paths applied while polling, looked at once more later: the poller compares whole-second mtimes, so a
    # second change within the same second would go unseen.
    recheck: dict[str, tuple[Observation, float]] = field(default_factory=dict)

    def add(self, paths: Iterable[str], now: float, look: Callable[[str], Observation] = observe) -> None:
        self.quiet_since = now
        if self.overflow:
            return
        for path in paths:
            self.pending[path] = (look(path), now)
            if len(self.pending) > self.cap:
                self.pending.clear()
                self.overflow = True
                return

    def due(self, now: float, look: Callable[[str], Observation] = observe) -> tuple[list[str], bool]:
        """(paths ready now, whether to rescan the folder); ready paths leave the queue, and a path that
        changed since it was seen starts a new window."""
        if self.overflow:
            if now - self.quiet_since < self.window_s:
                return [], False
            self.overflow = False
            return [], True
        for path, (seen, at) in list(self.recheck.items()):
            if now >= at:
                del self.recheck[path]
                current = look(path)
                if current != seen:
                    self.pending[path] = (current, now)
        ready = []
        for path, (seen, when) in list(self.pending.items()):
            if now - when < self.window_s:
                continue
            current = look(path)
            if current == seen:
                ready.append(path)
                del self.pending[path]
            else:
                self.pending[path] = (current, now)
        return sorted(ready), False

    def wait_s(self, now: float) -> float | None:
        """Seconds until the next path may be due; None when nothing is pending."""
        if self.overflow:
            return max(0.0, self.quiet_since + self.window_s - now)
        times = [when + self.window_s for _, when in self.pending.values()]
        times += [at for _, at in self.recheck.values()]
        return max(0.0, min(times) - now) if times else None

    def look_again(
        self, paths: Iterable[str], at: float, look: Callable[[str], Observation] = observe
    ) -> None:
        """Compare these paths' stat once more at `at`, and queue those that changed."""
        for path in paths:
            self.recheck[path] = (look(path), at)

    def requeue(self, paths: Iterable[str], now: float) -> None:
        """Paths whose indexing failed for a passing reason (another process was indexing): try again."""
        self.add(paths, now)
