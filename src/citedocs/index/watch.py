"""Registered folders kept current while a server runs: native file events (or polling), debounced, applied.

One thread per folder waits on `watchfiles`' Rust watcher (inotify, FSEvents, …; polling on network and FUSE
mounts or where native events cannot start), lets each changed path settle (`changes.Settle`) and hands the
ready ones to `apply` (the service's incremental indexer, which reads through the confined folder handle).
Only the process holding the folder's watch lease (`Store.try_watch_lease`) watches it; others stand by and
take over when it exits. A folder that disappears or is swapped for another is reported as `error` and
checked again every few seconds; when it is back, it is rescanned (events were missed) and watched again.
What each folder's watcher is doing, and the last change it applied, is kept in the index's meta table, so
`citedocs status` in another process can say it too.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from watchfiles._rust_notify import RustNotify, WatchfilesRustInternalError

from citedocs.errors import CitedocsError, NotFoundError
from citedocs.index.changes import Settle, relevant
from citedocs.index.folders import IndexProgress
from citedocs.settings import Settings
from citedocs.sources.confined import FolderHandle
from citedocs.sources.folders import DEFAULT_IGNORED_DIRS
from citedocs.store import Source, Store
from citedocs.store.leases import Lease

_log = logging.getLogger(__name__)

Apply = Callable[[int, Sequence[str] | None], IndexProgress | None]
"""(source id, changed absolute paths, or None for a rescan of the whole folder) -> what was done, or None
when the folder is gone from the registry."""

RETRY_S = 3.0  # a stand-by process asks for the lease, and a missing folder is looked for, this often
CHECK_S = 2.0  # while idle, the folder's identity is checked this often (one stat)
STEP_MS = 50  # the Rust watcher's step: a batch is handed over once no event came for this long
SYNC_S = 3.0  # how often the registry is read for folders added or removed by another process
NETWORK_FS = frozenset(
    {
        "nfs",
        "nfs4",
        "cifs",
        "smb3",
        "smbfs",
        "9p",
        "afs",
        "ceph",
        "glusterfs",
        "davfs",
        "lustre",
        "gpfs",
        "beegfs",
        "virtiofs",
        "vboxsf",
        "vmhgfs",
    }
)
REOPEN = "reopen"  # returned by a watch whose folder was moved or replaced meanwhile, and is back
NO_SERVER = (
    "no `citedocs serve` or `citedocs mcp` is watching this index; start one to keep folders current, "
    "or run `citedocs reindex`"
)


@dataclass(slots=True)
class FolderState:
    source: str
    path: str
    state: str = "starting"  # starting | watching | polling | standby | error | off
    reason: str | None = None
    since: float = 0.0
    pid: int = 0
    host: str = ""
    changes: int = 0  # batches applied since the watcher started
    last_change: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def meta_key(source_id: int) -> str:
    return f"watch:{source_id}"


def network_mount(path: str, mountinfo: str = "/proc/self/mountinfo") -> str | None:
    """The file system type when `path` is on a network or FUSE mount (native events miss remote changes)."""
    try:
        with open(mountinfo, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    best, kind = "", ""
    for line in lines:
        left, _, right = line.partition(" - ")
        fields = left.split()
        if len(fields) < 5 or not right:
            continue
        point = fields[4].replace("\\040", " ")
        if (path == point or path.startswith(point.rstrip("/") + "/")) and len(point) >= len(best):
            best, kind = point, right.split()[0]
    return kind if kind in NETWORK_FS or kind.startswith("fuse.") else None


class FolderWatcher:
    """Watches one registered folder in a thread of its own, while it holds the folder's lease."""

    def __init__(
        self, source: Source, store: Store, settings: Settings, apply: Apply, *, catch_up: bool = False
    ) -> None:
        self.source = source
        self.catch_up = catch_up
        self.store = store
        self.settings = settings
        self.apply = apply
        self.root = source.uri
        self.ignored = DEFAULT_IGNORED_DIRS | frozenset(settings.extra_ignore_dirs)
        self.state = FolderState(
            source.name, source.uri, since=time.time(), pid=os.getpid(), host=socket.gethostname()
        )
        self._stop = threading.Event()
        self._owner = False
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"citedocs-watch-{source.id}")

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 10.0, *, forget: bool = False) -> None:
        """Stop watching; `forget` (the folder was removed) also drops its record from the index."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        if forget:
            self.store.set_meta(meta_key(self.source.id), "")

    @property
    def owner(self) -> bool:
        return self._owner

    # -- state ------------------------------------------------------------------------------------
    def _set(self, state: str, reason: str | None = None) -> None:
        if (state, reason) != (self.state.state, self.state.reason):
            self.state.state, self.state.reason, self.state.since = state, reason, time.time()
            if state == "error":
                _log.warning("watching %s: %s", self.root, reason)
            self._persist()

    def _persist(self) -> None:
        if self._owner:
            try:
                self.store.set_meta(meta_key(self.source.id), json.dumps(self.state.to_dict()))
            except CitedocsError as exc:  # status is best effort; the watching goes on
                _log.warning("cannot record the watcher's state: %s", exc)

    # -- the loop ---------------------------------------------------------------------------------
    def _run(self) -> None:
        lease: Lease | None = None
        rescan = self.catch_up  # after a gap (stand-by, folder away) events were missed: rescan once watching
        try:
            while not self._stop.is_set():
                if lease is None:
                    try:
                        lease = self.store.try_watch_lease(self.source.id)
                    except OSError as exc:
                        self._set(
                            "error",
                            f"cannot take the watch lock beside the index ({exc.strerror}); "
                            "make the index's folder writable, or set CITEDOCS_WATCH=false",
                        )
                        self._stop.wait(RETRY_S)
                        continue
                    if lease is None:
                        self._set("standby", "another process watches this folder")
                        rescan = True
                        self._stop.wait(RETRY_S)
                        continue
                    self._owner = True
                problem = self._folder_problem()
                if problem is None:
                    problem = self._watch(rescan)
                    if problem is None:
                        return  # stopped
                    if problem is REOPEN:  # the folder itself was moved or replaced: watch it anew
                        rescan = True
                        continue
                self._set("error", problem)
                rescan = True
                self._stop.wait(RETRY_S)
        except Exception as exc:  # a watcher must never take the server down
            _log.warning("watching %s stopped: %s", self.root, exc)
            self._set("error", f"the watcher stopped ({type(exc).__name__}: {exc}); restart the server")
        finally:
            if lease is not None:
                if self.state.state != "error":
                    self._set("off", "the server stopped")
                self._owner = False
                lease.release()

    def _folder_problem(self) -> str | None:
        """Why the registered folder cannot be watched now (gone, unmounted, another folder), else None."""
        expected = self.source.options.get("identity")
        try:
            FolderHandle.pin(
                Path(self.root), (int(expected[0]), int(expected[1])) if expected else None
            ).close()
        except NotFoundError as exc:  # gone or unmounted: looked for again every few seconds
            return f"{exc.message} {exc.hint} Watching resumes when it is back."
        except CitedocsError as exc:  # another folder now: refused until registered again
            return f"{exc.message} {exc.hint}".strip()
        return None

    def _open(self) -> tuple[RustNotify, str, str | None]:
        mode = self.settings.watch_polling
        remote = network_mount(self.root) if mode == "auto" else None
        poll = mode == "on" or remote is not None
        why = f"a {remote} mount: native events miss remote changes" if remote else None
        args = (
            False,
            round(self.settings.watch_poll_s * 1000),
            True,
            True,
        )  # debug, poll delay, recursive, no EACCES
        try:
            return RustNotify([self.root], args[0], poll, *args[1:]), "polling" if poll else "watching", why
        except OSError as exc:
            if poll or mode == "off":
                raise
            why = f"native events unavailable ({exc}); polling every {self.settings.watch_poll_s:g} s"
            return RustNotify([self.root], args[0], True, *args[1:]), "polling", why

    def _watch(self, rescan: bool) -> str | None:
        """Watch until stopped (None), until the folder goes away (the reason), or REOPEN when the folder
        itself changed (a native watch stays on the old directory, even if another took its place)."""
        try:
            notify, mode, why = self._open()
        except (OSError, RuntimeError) as exc:
            hint = (
                "set CITEDOCS_WATCH_POLLING=on to poll"
                if self.settings.watch_polling == "off"
                else ("raise fs.inotify.max_user_watches, or set CITEDOCS_WATCH_POLLING=on")
            )
            return f"cannot watch: {exc}; {hint}"
        window_ms = max(1, round(self.settings.watch_debounce_s * 1000))
        settle = Settle(self.settings.watch_debounce_s, self.settings.watch_max_events)
        polling = mode == "polling"
        with notify:
            if polling:  # the poller's first scan runs in its own thread and keeps whole-second mtimes: a
                # change before it or within its second is unseen, so rescan once that second is over
                self._stop.wait(self.settings.watch_poll_s + 1.0 - time.time() % 1.0)
                rescan = True
            self._set(mode, why)
            if rescan:
                self._apply(None, settle)
            checked = time.monotonic()
            while not self._stop.is_set():
                wait = settle.wait_s(time.monotonic())
                timeout_ms = int(CHECK_S * 1000) if wait is None else max(1, int(wait * 1000) + 1)
                try:
                    raw = notify.watch(window_ms, min(STEP_MS, window_ms), timeout_ms, self._stop)
                except WatchfilesRustInternalError as exc:  # e.g. a file name that is not UTF-8: the batch
                    _log.info("watching %s: %s; rescanning", self.root, exc)  # is lost, the walk lists it
                    return REOPEN
                now = time.monotonic()
                if raw == "stop":
                    return None
                if isinstance(raw, set):
                    settle.add({p for _, p in raw if relevant(p, self.root, self.ignored)}, now)
                    touched_root = any(p == self.root for _, p in raw)
                else:
                    touched_root = False
                if touched_root or now - checked >= CHECK_S:
                    checked = now
                    problem = self._folder_problem()
                    if problem is not None:
                        return problem
                    if touched_root:
                        return REOPEN
                ready, whole = settle.due(now)
                if ready or whole:
                    self._apply(None if whole else ready, settle)
                    if polling and ready:
                        settle.look_again(ready, time.monotonic() + 1.0 + self.settings.watch_poll_s)
        return None

    def _apply(self, paths: list[str] | None, settle: Settle) -> None:
        started = time.time()
        try:
            report = self.apply(self.source.id, paths)
        except NotFoundError:
            self._stop.set()  # unregistered meanwhile: the manager forgets this watcher
            return
        except Exception as exc:  # e.g. another process is indexing it: try these paths again, later
            message = exc.message if isinstance(exc, CitedocsError) else f"{type(exc).__name__}: {exc}"
            self.state.reason = f"{message} (retrying)"
            _log.warning("watching %s: %s", self.root, self.state.reason)
            self._stop.wait(RETRY_S)
            if paths is None:
                settle.overflow = True
            else:
                settle.requeue(paths, time.monotonic())
            return
        if report is None:
            return
        if self.state.reason and self.state.reason.endswith("(retrying)"):
            self.state.reason = None
        self.state.changes += 1
        self.state.last_change = {
            "time": started,
            "paths": report.total if paths is None else len(paths),
            "rescan": paths is None,
            "indexed": report.indexed,
            "removed": report.removed,
            "unchanged": report.unchanged,
            "failed": report.failed,
            "seconds": round(time.time() - started, 3),
        }
        self._persist()


class WatchManager:
    """One `FolderWatcher` per registered folder, following the registry while a server runs."""

    def __init__(self, store: Store, settings: Settings, apply: Apply, *, catch_up: bool = True) -> None:
        self.store = store
        self.settings = settings
        self.apply = apply
        self.catch_up = catch_up  # folders present at start; one registered later is indexed when added
        self._started = False
        self._watchers: dict[int, FolderWatcher] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if not self.settings.watch or self._thread is not None:
            return
        self.sync()
        self._thread = threading.Thread(target=self._follow, daemon=True, name="citedocs-watch")
        self._thread.start()

    def sync(self) -> None:
        """Start watchers for newly registered folders and stop those of removed ones."""
        if not self.settings.watch or self._stop.is_set():
            return
        sources = {s.id: s for s in self.store.list_sources("folder")}
        with self._lock:
            gone = [self._watchers.pop(i) for i in list(self._watchers) if i not in sources]
            for source_id, source in sources.items():
                if source_id not in self._watchers:
                    catch_up = self.catch_up and not self._started
                    watcher = FolderWatcher(source, self.store, self.settings, self.apply, catch_up=catch_up)
                    self._watchers[source_id] = watcher
                    watcher.start()
            self._started = True
        for watcher in gone:
            watcher.stop(forget=watcher.owner)

    def _follow(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(SYNC_S)
            self._wake.clear()
            try:
                self.sync()
            except CitedocsError as exc:
                _log.warning("cannot read the registered folders: %s", exc)

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(10.0)
        with self._lock:
            watchers = list(self._watchers.values())
            self._watchers.clear()
        for watcher in watchers:
            watcher.stop()

    def states(self) -> dict[int, FolderState]:
        with self._lock:
            return {i: w.state for i, w in self._watchers.items()}


def watch_status(
    store: Store, local: Mapping[int, FolderState] | None = None, *, disabled: bool = False
) -> list[dict[str, Any]]:
    """Each registered folder's watcher: this process's own, else the record of the process that holds the
    folder's lease, else `off` with the reason and the last change any watcher applied."""
    out = []
    for source in store.list_sources("folder"):
        mine = (local or {}).get(source.id)
        if mine is not None and mine.state != "standby":
            out.append({**mine.to_dict(), "here": True})
            continue
        raw = store.get_meta(meta_key(source.id))
        record: dict[str, Any] = json.loads(raw) if raw else {}
        if record and record.get("state") != "off" and store.watch_lease_held(source.id):
            out.append({**record, "source": source.name, "path": source.uri, "here": False})
            continue
        if mine is not None:
            reason = "the process that watched this folder stopped; this one takes over within seconds"
        elif disabled:
            reason = "watching is off in this process (CITEDOCS_WATCH=false)"
        else:
            reason = NO_SERVER
        out.append(
            {
                **FolderState(source.name, source.uri).to_dict(),
                "state": "off",
                "reason": reason,
                "since": record.get("since"),
                "pid": record.get("pid"),
                "host": record.get("host"),
                "last_change": record.get("last_change"),
                "changes": record.get("changes", 0),
                "here": False,
            }
        )
    return out


class Rerunner:
    """Runs `work` in one background thread, once more if asked again while it runs: the embedding pass that
    follows the watcher's changes (a pass started meanwhile picks up everything pending)."""

    def __init__(self, work: Callable[[], object], name: str, closing: threading.Event) -> None:
        self._work = work
        self._name = name
        self._closing = closing
        self._lock = threading.Lock()
        self._wanted = False
        self._thread: threading.Thread | None = None

    def kick(self) -> None:
        with self._lock:
            self._wanted = True
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, daemon=True, name=self._name)
                self._thread.start()

    def _loop(self) -> None:
        while not self._closing.is_set():
            with self._lock:
                if not self._wanted:
                    return
                self._wanted = False
            try:
                self._work()
            except Exception as exc:  # recorded in the jobs table; the next change tries again
                _log.warning("%s stopped: %s", self._name, exc)

    def join(self, timeout: float) -> None:
        thread = self._thread
        if thread is not None and thread.is_alive() and thread is not threading.current_thread():
            thread.join(timeout)
