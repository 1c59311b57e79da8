"""The folder watcher, in-process through the `Citedocs` facade: real files, a real watcher (inotify here),
real SQLite. Each change must show in keyword search within the bound, with no duplicate and no missed
deletion; the index must equal what is on disk afterwards."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from citedocs.index.changes import Settle, relevant
from citedocs.index.watch import network_mount, watch_status
from citedocs.service import Citedocs
from citedocs.settings import Settings
from citedocs.sources.folders import editor_temp_file

DEBOUNCE_MS = 100
# debounce + indexing, on a shared 2-core machine; the measured P50 is in docs/decisions/watching.md
BOUND_S = 5.0


def settings(tmp_path: Path, **extra: Any) -> Settings:
    return Settings(
        db=str(tmp_path / "index.sqlite3"), embedder="none", watch_debounce_s=DEBOUNCE_MS / 1000, **extra
    )


def wait_until(check: Callable[[], bool], what: str, timeout: float = BOUND_S) -> float:
    """Seconds until `check()` held; fails saying what did not happen."""
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > timeout:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(0.02)
    return time.monotonic() - started


def state_of(app: Citedocs) -> dict[str, Any]:
    return app.watch_status()[0]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "alpha.md").write_text("# Alpha\n\nThe heron wades in the marsh.\n", encoding="utf-8")
    (root / "beta.md").write_text("# Beta\n\nThe kestrel hovers over the field.\n", encoding="utf-8")
    return root


def start(tmp_path: Path, folder: Path, **extra: Any) -> Citedocs:
    app = Citedocs(settings(tmp_path, **extra))
    app.add_folder(folder)
    app.index()
    app.start_watching(catch_up=False)
    wait_until(lambda: state_of(app)["state"] == "watching", "the watcher starts")
    return app


@pytest.fixture
def app(tmp_path: Path, folder: Path) -> Iterator[Citedocs]:
    app = start(tmp_path, folder)
    yield app
    app.close()


def found(app: Citedocs, query: str) -> list[str]:
    """Relative paths of the keyword hits (one per chunk: a duplicate document shows twice)."""
    root = str(app.folders()[0])
    return sorted(h.path[len(root) + 1 :] for h in app.search(query, mode="keyword", k=50).hits)


def on_disk(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*.md") if ".git" not in p.parts}


def in_sync(app: Citedocs, folder: Path) -> bool:
    """The index holds exactly the files on disk, each with its current content."""
    source = app.store.list_sources("folder")[0]
    stored = {doc.rel_path: doc.sha256 for doc in app.store.documents(source.id).values()}
    disk = {rel: hashlib.sha256((folder / rel).read_bytes()).hexdigest() for rel in on_disk(folder)}
    return stored == disk


def indexed(app: Citedocs) -> set[str]:
    source = app.store.list_sources("folder")[0]
    return {doc.rel_path for doc in app.store.documents(source.id).values()}


def test_edit_create_delete_and_rename_each_show_in_search(app: Citedocs, folder: Path) -> None:
    (folder / "alpha.md").write_text("# Alpha\n\nThe egret replaced the heron.\n", encoding="utf-8")
    wait_until(lambda: found(app, "egret") == ["alpha.md"], "the edit is searchable")
    assert found(app, "wades") == []  # the old text is gone, not kept beside the new

    (folder / "gamma.md").write_text("# Gamma\n\nA bittern booms at dusk.\n", encoding="utf-8")
    wait_until(lambda: found(app, "bittern") == ["gamma.md"], "the new file is searchable")

    os.rename(folder / "gamma.md", folder / "delta.md")
    wait_until(lambda: found(app, "bittern") == ["delta.md"], "the rename shows under the new name only")

    (folder / "beta.md").unlink()
    wait_until(lambda: found(app, "kestrel") == [], "the deleted file is purged")
    assert in_sync(app, folder) and on_disk(folder) == {"alpha.md", "delta.md"}
    last = state_of(app)["last_change"]
    assert last["removed"] == 1 and last["rescan"] is False and last["paths"] >= 1


def test_a_moved_subtree_is_purged_at_its_old_place_and_indexed_at_the_new(
    app: Citedocs, folder: Path, tmp_path: Path
) -> None:
    sub = folder / "guide" / "birds"
    sub.mkdir(parents=True)
    for i in range(5):
        (sub / f"b{i}.md").write_text(f"# Bird {i}\n\nThe plover number{i} runs.\n", encoding="utf-8")
    wait_until(lambda: len(found(app, "plover")) == 5, "the new subtree is indexed")

    os.rename(folder / "guide", folder / "manual")
    wait_until(lambda: found(app, "plover") == [f"manual/birds/b{i}.md" for i in range(5)], "the move")

    outside = tmp_path / "elsewhere"
    os.rename(folder / "manual", outside)  # moved out of the registered folder: purged
    wait_until(lambda: found(app, "plover") == [], "the subtree moved out is purged")

    os.rename(outside, folder / "back")  # and moved in from outside: indexed
    wait_until(lambda: len(found(app, "plover")) == 5, "the subtree moved in is indexed")
    assert in_sync(app, folder)


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), *args],
        check=True,
        capture_output=True,
        env={
            **os.environ,
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@example.org",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.org",
        },
    )


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git on PATH")
def test_a_git_checkout_of_a_branch_that_changes_many_files_is_reflected_exactly(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "notes").mkdir(parents=True)
    for i in range(300):
        (repo / "notes" / f"n{i:03}.md").write_text(f"# Note {i}\n\nmainline text{i}\n", encoding="utf-8")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "main")
    git(repo, "checkout", "-q", "-b", "feature")
    for i in range(0, 100):  # 100 edited, 50 deleted, 50 added in a new folder
        (repo / "notes" / f"n{i:03}.md").write_text(f"# Note {i}\n\nfeatured text{i}\n", encoding="utf-8")
    for i in range(100, 150):
        (repo / "notes" / f"n{i:03}.md").unlink()
    (repo / "added").mkdir()
    for i in range(50):
        (repo / "added" / f"a{i}.md").write_text(f"# Added {i}\n\nfreshly written\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "feature")
    git(repo, "checkout", "-q", "main")

    app = start(tmp_path, repo)
    try:
        assert len(indexed(app)) == 300
        git(repo, "checkout", "-q", "feature")
        wait_until(lambda: in_sync(app, repo), "the index equals the checked-out tree", 30)
        assert len(found(app, "featured")) == 50  # k=50: at least 50 of the 100 edited files
        assert found(app, "freshly") == sorted(f"added/a{i}.md" for i in range(50))
        assert app.store.counts()["documents"] == len(on_disk(repo)) == 300

        git(repo, "checkout", "-q", "main")
        wait_until(lambda: in_sync(app, repo) and len(on_disk(repo)) == 300, "back to main", 30)
        assert found(app, "freshly") == [] and found(app, "featured") == []
    finally:
        app.close()


def test_a_file_written_in_pieces_is_indexed_once_when_complete(app: Citedocs, folder: Path) -> None:
    generation = app.store._generation_now()
    with (folder / "long.md").open("w", encoding="utf-8") as f:
        for piece in range(8):  # pauses shorter than the debounce window
            f.write(f"part{piece} of the long note\n\n")
            f.flush()
            time.sleep(DEBOUNCE_MS / 1000 / 3)
        f.write("the final sentence\n")
    wait_until(lambda: found(app, "final") == ["long.md"], "the complete file is searchable")
    assert found(app, "part0") == ["long.md"] and found(app, "part7") == ["long.md"]
    time.sleep(DEBOUNCE_MS * 3 / 1000)
    assert app.store._generation_now() - generation == 1  # one document write: indexed once


def test_editor_swap_lock_and_backup_files_are_never_indexed(app: Citedocs, folder: Path) -> None:
    for name in (".alpha.md.swp", "alpha.md~", "4913", "~$report.docx", "alpha.md.tmp", "#alpha.md#"):
        (folder / name).write_text("swapfile junk", encoding="utf-8")
    os.symlink("user@host.1234:1700000000", folder / ".#alpha.md")  # emacs' lock: a dangling link
    (folder / "real.md").write_text("# Real\n\nswapfile junk mentioned for real\n", encoding="utf-8")
    wait_until(lambda: found(app, "swapfile") == ["real.md"], "only the real file is indexed")
    assert app.store.failed_documents() == []
    assert indexed(app) == {"alpha.md", "beta.md", "real.md"}


def test_a_flood_beyond_the_cap_is_one_rescan_that_indexes_each_file_once(
    tmp_path: Path, folder: Path
) -> None:
    app = start(tmp_path, folder, watch_max_events=20)
    try:
        conn = app.store._conn()
        seq = app.store._change_seq(conn)
        for i in range(100):
            (folder / f"f{i}.md").write_text(f"# F{i}\n\nflooded {i}\n", encoding="utf-8")
        wait_until(lambda: len(indexed(app)) == 102, "all hundred are indexed")
        wait_until(lambda: (state_of(app)["last_change"] or {}).get("rescan") is True, "a rescan is recorded")
        time.sleep(DEBOUNCE_MS * 3 / 1000)
        # each new file's chunks written once (files are committed in batches: the generation moves less)
        changes = conn.execute(
            "SELECT added, COUNT(*) FROM chunk_changes WHERE seq > ? GROUP BY added", (seq,)
        )
        flooded = "SELECT COUNT(*) FROM chunks c JOIN documents d ON d.id = c.document_id WHERE d.rel_path GLOB 'f*'"
        assert dict(changes.fetchall()) == {1: conn.execute(flooded).fetchone()[0]} == {1: 100}
    finally:
        app.close()


def test_a_folder_moved_away_is_reported_and_watched_again_when_it_is_back(
    app: Citedocs, folder: Path, tmp_path: Path
) -> None:
    away = tmp_path / "away"
    os.rename(folder, away)
    wait_until(lambda: state_of(app)["state"] == "error", "the missing folder is reported")
    reason = state_of(app)["reason"]
    assert "cannot be opened" in reason and "resumes when it is back" in reason
    assert found(app, "kestrel") == ["beta.md"]  # the server goes on: nothing purged for an unmounted folder
    (away / "beta.md").write_text("# Beta\n\nA merlin now.\n", encoding="utf-8")  # changed while away
    os.rename(away, folder)
    wait_until(lambda: state_of(app)["state"] == "watching", "watching resumes", 15)
    wait_until(lambda: found(app, "merlin") == ["beta.md"], "what changed meanwhile is caught up")
    (folder / "alpha.md").write_text("# Alpha\n\nA curlew calls.\n", encoding="utf-8")
    wait_until(lambda: found(app, "curlew") == ["alpha.md"], "and new changes are seen again")


def test_a_folder_replaced_by_another_says_how_to_resume(app: Citedocs, folder: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()  # made while the old folder exists: another inode for certain
    os.rename(folder, tmp_path / "old")
    os.rename(other, folder)
    wait_until(lambda: "different folder" in (state_of(app)["reason"] or ""), "the swap is reported", 15)
    assert "citedocs remove" in state_of(app)["reason"] and state_of(app)["state"] == "error"


def test_a_folder_deleted_and_made_again_is_watched_anew_or_refused(
    app: Citedocs, folder: Path, tmp_path: Path
) -> None:
    shutil.rmtree(folder)
    folder.mkdir()  # may get the old inode back: the identity check cannot tell, the root event can
    (folder / "new.md").write_text("# New\n\nA stint.\n", encoding="utf-8")
    wait_until(
        lambda: found(app, "stint") == ["new.md"] or "different folder" in (state_of(app)["reason"] or ""),
        "the new folder is watched, or refused with the way to re-register it",
        15,
    )
    if state_of(app)["state"] != "error":
        assert indexed(app) == {"new.md"}  # the deleted files are purged


def test_one_watcher_per_folder_across_two_servers_on_one_index(tmp_path: Path, folder: Path) -> None:
    first = start(tmp_path, folder)
    second = Citedocs(settings(tmp_path))
    second.start_watching(catch_up=False)
    try:
        # under load the first server's watcher may not have said "watching" yet when the second stands by
        wait_until(
            lambda: (
                second.jobs.watcher is not None
                and second.jobs.watcher.states()[1].state == "standby"
                and state_of(second)["state"] == "watching"
            ),
            "the second server stands by and shows the first one's watcher",
        )
        shown = state_of(second)
        assert shown["state"] == "watching" and shown["here"] is False and shown["pid"] == os.getpid()
        (folder / "alpha.md").write_text("# Alpha\n\nThe avocet.\n", encoding="utf-8")
        wait_until(lambda: found(second, "avocet") == ["alpha.md"], "the owner indexes it")
        assert second.jobs.watcher is not None and second.jobs.watcher.states()[1].changes == 0  # not twice
        first.close()
        wait_until(
            lambda: state_of(second)["state"] == "watching" and state_of(second)["here"], "takeover", 15
        )
        (folder / "beta.md").write_text("# Beta\n\nThe dunlin.\n", encoding="utf-8")
        wait_until(lambda: found(second, "dunlin") == ["beta.md"], "the new owner indexes changes")
    finally:
        second.close()
        first.close()


def test_status_in_another_process_view_shows_the_owner_then_off(app: Citedocs, tmp_path: Path) -> None:
    (Path(app.folders()[0]) / "alpha.md").write_text("# Alpha\n\nA godwit.\n", encoding="utf-8")
    wait_until(lambda: found(app, "godwit") == ["alpha.md"], "the change is applied")
    viewer = Citedocs(settings(tmp_path))  # no watcher: what `citedocs status` sees
    try:
        entry = viewer.status()["watch"][0]
        assert entry["state"] == "watching" and entry["here"] is False
        assert entry["last_change"]["indexed"] == 1 and entry["last_change"]["time"] > 0
        app.close()
        entry = viewer.watch_status()[0]
        assert entry["state"] == "off" and "citedocs serve" in entry["reason"]
        assert entry["last_change"]["indexed"] == 1  # the last change applied is still told
    finally:
        viewer.close()


def test_watching_off_in_settings_starts_nothing(tmp_path: Path, folder: Path) -> None:
    app = Citedocs(settings(tmp_path, watch=False))
    app.add_folder(folder)
    app.start_watching()
    try:
        entry = app.watch_status()[0]
        assert entry["state"] == "off" and "CITEDOCS_WATCH=false" in entry["reason"]
    finally:
        app.close()


def test_a_folder_registered_while_serving_is_watched_and_a_removed_one_forgotten(
    app: Citedocs, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    app.add_folder(other)
    wait_until(lambda: [e["state"] for e in app.watch_status()] == ["watching", "watching"], "both watched")
    (other / "o.md").write_text("# O\n\nA sanderling.\n", encoding="utf-8")
    wait_until(lambda: len(app.search("sanderling", mode="keyword").hits) == 1, "the new folder's change")
    app.remove(str(other))
    assert len(app.watch_status()) == 1 and app.store.get_meta("watch:2") == ""


def test_polling_mode_sees_changes_too(tmp_path: Path, folder: Path) -> None:
    app = Citedocs(settings(tmp_path, watch_polling="on", watch_poll_s=0.1))
    app.add_folder(folder)
    app.index()
    app.start_watching(catch_up=False)
    try:
        wait_until(lambda: state_of(app)["state"] == "polling", "polling starts")
        (folder / "alpha.md").write_text("# Alpha\n\nA turnstone.\n", encoding="utf-8")
        wait_until(lambda: found(app, "turnstone") == ["alpha.md"], "the poller sees the edit")
        (folder / "alpha.md").write_text("# Alpha\n\nA knot, edited again.\n", encoding="utf-8")
        wait_until(lambda: found(app, "knot") == ["alpha.md"], "a second edit within the same second")
    finally:
        app.close()


def test_catch_up_rescans_what_changed_while_no_server_ran(tmp_path: Path, folder: Path) -> None:
    app = Citedocs(settings(tmp_path))
    app.add_folder(folder)
    app.index()
    (folder / "alpha.md").write_text("# Alpha\n\nA whimbrel.\n", encoding="utf-8")
    app.start_watching()  # as `citedocs mcp` does
    try:
        wait_until(lambda: found(app, "whimbrel") == ["alpha.md"], "the change made before start")
    finally:
        app.close()


# -- the pure parts ------------------------------------------------------------------------------------
def test_settle_waits_for_a_path_to_hold_still_for_one_window() -> None:
    looks = {"/r/a.md": (1, 1, 1, 1)}
    settle = Settle(window_s=0.1, cap=10)
    settle.add(["/r/a.md"], now=0.0, look=looks.get)
    assert settle.due(0.05, look=looks.get) == ([], False)
    looks["/r/a.md"] = (2, 2, 1, 1)  # grew meanwhile: a new window starts
    assert settle.due(0.11, look=looks.get) == ([], False)
    assert settle.wait_s(0.11) == pytest.approx(0.1)
    assert settle.due(0.22, look=looks.get) == (["/r/a.md"], False)
    assert settle.wait_s(0.3) is None


def test_settle_looks_again_at_polled_paths_and_queues_only_those_that_changed() -> None:
    looks: dict[str, Any] = {"/r/a": (1, 1, 1, 1), "/r/b": (1, 1, 2, 1)}
    settle = Settle(window_s=0.1, cap=10)
    settle.look_again(["/r/a", "/r/b"], at=1.0, look=looks.get)
    looks["/r/b"] = (5, 5, 2, 1)
    assert settle.wait_s(0.5) == pytest.approx(0.5)
    assert settle.due(1.0, look=looks.get) == ([], False) and list(settle.pending) == ["/r/b"]
    assert settle.due(1.2, look=looks.get) == (["/r/b"], False) and not settle.recheck


def test_settle_beyond_the_cap_asks_for_one_rescan_once_quiet() -> None:
    settle = Settle(window_s=0.1, cap=3)
    settle.add([f"/r/{i}" for i in range(5)], now=0.0, look=lambda p: None)
    assert settle.overflow and not settle.pending
    settle.add(["/r/late"], now=0.05, look=lambda p: None)
    assert settle.due(0.1, look=lambda p: None) == ([], False)
    assert settle.due(0.16, look=lambda p: None) == ([], True)
    assert settle.due(0.3, look=lambda p: None) == ([], False)


def test_relevant_skips_ignored_folders_swap_files_and_other_trees() -> None:
    ignored = frozenset({".git", "node_modules"})
    assert relevant("/r/docs/a.md", "/r", ignored)
    assert not relevant("/r/.git/index", "/r", ignored)
    assert not relevant("/r/x/node_modules/y.md", "/r", ignored)
    assert not relevant("/r/.a.md.swp", "/r", ignored)
    assert not relevant("/rx/a.md", "/r", ignored) and not relevant("/r", "/r", ignored)
    assert editor_temp_file("4913") and editor_temp_file(".#notes.md") and not editor_temp_file("notes.md")


def test_network_mounts_are_polled(tmp_path: Path) -> None:
    info = tmp_path / "mountinfo"
    info.write_text(
        "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
        "40 22 0:50 / /mnt/share rw,relatime - nfs4 server:/export rw\n"
        "41 22 0:51 / /home/me/my\\040drive rw - fuse.sshfs me@host: rw\n",
        encoding="utf-8",
    )
    assert network_mount("/mnt/share/docs", str(info)) == "nfs4"
    assert network_mount("/home/me/my drive", str(info)) == "fuse.sshfs"
    assert network_mount("/mnt/shared", str(info)) is None and network_mount("/srv", str(info)) is None


def test_status_without_any_server_says_how_to_get_one(tmp_path: Path, folder: Path) -> None:
    app = Citedocs(settings(tmp_path))
    app.add_folder(folder)
    try:
        (entry,) = watch_status(app.store)
        assert (
            entry["state"] == "off" and "citedocs serve" in entry["reason"] and entry["last_change"] is None
        )
    finally:
        app.close()


def test_the_watch_lease_is_exclusive_and_let_go_on_release(tmp_path: Path) -> None:
    from citedocs.store import open_store

    one, two = open_store(str(tmp_path / "i.sqlite3")), open_store(str(tmp_path / "i.sqlite3"))
    lease = one.try_watch_lease(7)
    assert lease is not None and two.try_watch_lease(7) is None and two.watch_lease_held(7)
    assert two.try_watch_lease(8) is not None  # one lease per folder
    lease.release()
    assert not two.watch_lease_held(7) and two.try_watch_lease(7) is not None


def test_the_postgres_watch_lease_is_an_advisory_lock_of_its_own_session(pg_url: str) -> None:
    from citedocs.store import open_store

    one, two = open_store(pg_url), open_store(pg_url)
    try:
        lease = one.try_watch_lease(3)
        assert lease is not None and two.try_watch_lease(3) is None and two.watch_lease_held(3)
        with two.source_lock(3):  # watching a folder does not stop a `reindex` of it
            pass
        lease.release()
        assert not two.watch_lease_held(3) and two.try_watch_lease(3) is not None
    finally:
        one.close()
        two.close()
