"""Folders that hold keys, tokens, logs or other people's files: never registered unless the CLI is told to.

A registered folder can be read by every client (an MCP client steered by injected text could add `~/.ssh`
and read the key), so registration refuses, besides the system trees and roots in `folders.py`:

- any hidden folder directly in the home folder, and everything in it: `~/.ssh`, `~/.aws`, `~/.gnupg`,
  `~/.config`, `~/.cache`, `~/.local`, `~/.mozilla`, `~/.kube`, `~/.docker`, `~/.password-store`, ... (where
  applications keep settings, credentials and browser profiles), and `~/Library`, `~/AppData`, `~/snap`;
- other users' home folders (`/home/NAME`, `/Users/NAME`, `/root` when it is not yours);
- logs, mail, spools and service state (`/var/log`, `/var/mail`, `/var/spool`, `/var/cache`, `/var/backups`,
  `/var/db` and their /private twins), and programs and libraries (`/usr`, `/bin`, `/lib`, `/snap`, ...) apart from
  the documentation trees `/usr/share/doc`, `/usr/local/share/doc` and `/usr/share/man`.

`citedocs add --allow-system-folder PATH` overrides it; MCP and HTTP clients cannot. Inside a registered folder,
a folder named like one that holds keys (`SECRET_DIR_NAMES`: a stray `.ssh/` or `.aws/` copied into a project) is
never walked.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["SECRET_DIR_NAMES", "secret_folder_problem"]

# Folders named like these hold keys, tokens and credentials wherever they are: skipped inside a registered folder.
SECRET_DIR_NAMES = frozenset(
    {".ssh", ".gnupg", ".aws", ".azure", ".gcloud", ".kube", ".docker", ".password-store", ".netrc.d"}
)

_SECRET_TREES = tuple(
    Path(p)
    for p in (
        "/var/log",
        "/var/mail",
        "/var/spool",
        "/var/cache",
        "/var/backups",
        "/var/db",
        "/var/lib",
        "/private/var/log",
        "/private/var/db",
        "/private/var/root",
        "/private/var/mail",
        "/private/var/spool",
        "/usr",
        "/bin",
        "/sbin",
        "/lib",
        "/lib32",
        "/lib64",
        "/libx32",
        "/snap",
        "/root",
    )
)
_DOC_TREES = tuple(Path(p) for p in ("/usr/share/doc", "/usr/local/share/doc", "/usr/share/man"))
_HOME_ROOTS = tuple(Path(p) for p in ("/home", "/Users"))
_HOME_APP_FOLDERS = frozenset({"Library", "AppData", "snap"})


def _within(path: Path, tree: Path) -> bool:
    return path == tree or path.is_relative_to(tree)


def secret_folder_problem(resolved: Path, home: Path | None) -> str | None:
    """Why `resolved` (a resolved folder) may hold secrets or other people's files, or None."""
    if home is not None and resolved.is_relative_to(home) and resolved != home:
        first = resolved.relative_to(home).parts[0]
        if first.startswith(".") or first in _HOME_APP_FOLDERS:
            return (
                f"{resolved} is inside {home / first}, where applications keep settings, keys and "
                "browser profiles"
            )
        return None
    for root in _HOME_ROOTS:
        if resolved.is_relative_to(root) and resolved != root:
            owner = root / resolved.relative_to(root).parts[0]
            if home is None or not _within(home, owner):
                return f"{resolved} is in another user's home folder ({owner})"
    if any(_within(resolved, tree) for tree in _DOC_TREES):
        return None
    for tree in _SECRET_TREES:
        if _within(resolved, tree) and not (home is not None and _within(home, tree)):
            return (
                f"{resolved} is a system folder ({tree} holds logs, service state or programs, not documents)"
            )
    return None
