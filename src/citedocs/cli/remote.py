"""A `citedocs serve` already running on the same index answers a CLI search in one HTTP request.

A one-off command would otherwise import the whole library and load the embedding model for a single query
(1-2.6 s); the server has both warm. `serve` announces itself in a small file beside the index
(`index.sqlite3.server.json`: URL, pid, index path) for as long as it listens, and removes it when it stops.
The CLI uses it only when the pid is alive and the index is the same file; any failure falls back to the
local search. Only the standard library is imported here, so the fast path pays for nothing else.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from citedocs.announce import announce, server_file

__all__ = [
    "ServerReply",
    "announce",
    "ask",
    "embed_on_server",
    "exit_code",
    "get",
    "post",
    "running_server",
    "search",
    "server_file",
    "server_info",
    "server_status",
]

# A search on a warm server takes milliseconds; a hybrid one while the model loads waits for it.
READ_TIMEOUT_S = 60.0
ASK_WAIT_S = 600.0  # an answer on CPU takes seconds to minutes, more while the server's model loads


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive, but not a server we should talk to
        return False
    return True


def running_server(db_path: Path | None) -> str | None:
    """The URL of a live `citedocs serve` on this index, or None."""
    found = server_info(db_path)
    return None if found is None else found[0]


def server_info(db_path: Path | None) -> tuple[str, int] | None:
    """The URL and pid of a live `citedocs serve` on this index, or None."""
    if db_path is None:
        return None
    try:
        info = json.loads(server_file(db_path).read_text(encoding="utf-8"))
        url, pid, db = str(info["url"]), int(info["pid"]), str(info["db"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if db != str(db_path) or not _alive(pid) or not url.startswith("http://"):
        return None
    return url.rstrip("/"), pid


def get(url: str, route: str) -> dict[str, Any] | None:
    """GET a JSON object from the server; None when it cannot be reached or does not answer with one."""
    import urllib.request  # ~50 ms: only once a server is announced on this index

    try:
        with urllib.request.urlopen(url + route, timeout=READ_TIMEOUT_S) as response:
            body = json.loads(response.read())
    except (OSError, ValueError):
        return None
    return body if isinstance(body, dict) else None


class ServerReply:
    """What the server answered: `status` and the JSON body (the data, or the error envelope)."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        self.status = status
        self.body = body

    @property
    def error(self) -> dict[str, Any] | None:
        if self.status < 400:
            return None
        error = self.body.get("error")
        return error if isinstance(error, dict) else {"message": f"HTTP {self.status}", "hint": ""}


def post(
    url: str, route: str, payload: dict[str, Any], timeout: float = READ_TIMEOUT_S
) -> ServerReply | None:
    """POST JSON to the server; None when it cannot be reached (the caller then searches locally)."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        url + route, data=json.dumps(payload).encode("utf-8"), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return ServerReply(response.status, json.loads(response.read()))
    except urllib.error.HTTPError as exc:
        try:
            return ServerReply(exc.code, json.loads(exc.read()))
        except ValueError:
            return None
    except (OSError, ValueError):
        return None


def _not_for_us(reply: ServerReply | None) -> bool:
    """The server cannot answer this process: unreachable, it asks for a token (this process, which can open
    the index, answers by itself instead), or it does not answer this Host name."""
    return (
        reply is None
        or reply.status == 401
        or (reply.status in (403, 421) and "Host" in str((reply.error or {}).get("message", "")))
    )


def search(db_path: Path | None, payload: dict[str, Any]) -> ServerReply | None:
    """The /search reply of a server running on this index, or None: no server, unreachable, or one that does
    not answer this Host (then this process searches by itself)."""
    url = running_server(db_path)
    if url is None:
        return None
    reply = post(url, "/search", {key: value for key, value in payload.items() if value is not None})
    return None if _not_for_us(reply) else reply


def server_status(db_path: Path | None) -> dict[str, Any] | None:
    """What a `citedocs serve` running on this index says of its embedder and model (its `GET /status`), with
    `url` and `pid`; None when none runs or it does not answer."""
    found = server_info(db_path)
    if found is None:
        return None
    url, pid = found
    body = get(url, "/status")
    if body is None or not isinstance(body.get("embedder"), dict) or not isinstance(body.get("llm"), dict):
        return None
    return {"url": url, "pid": pid, "embedder": body["embedder"], "llm": body["llm"]}


def ask(db_path: Path | None, payload: dict[str, Any]) -> ServerReply | None:
    """The /ask reply (one JSON envelope) of a server running on this index, so the answer comes from its warm
    model; None when there is none or it cannot be reached (then this process answers by itself). While the
    server's model starts or its slots are full (503), it asks again, for up to ASK_WAIT_S."""
    url = running_server(db_path)
    if url is None:
        return None
    deadline = time.monotonic() + ASK_WAIT_S
    body = {key: value for key, value in payload.items() if value is not None}
    while True:
        reply = post(url, "/ask?stream=false", body, timeout=ASK_WAIT_S)
        if reply is None or _not_for_us(reply):
            return None
        code = (reply.error or {}).get("code")
        if reply.status != 503 or code not in ("busy", "model_unavailable") or time.monotonic() > deadline:
            return reply
        if code == "model_unavailable" and "starting" not in str((reply.error or {}).get("message", "")):
            return reply  # not coming: no model, or it failed; the reply says what to do
        time.sleep(1.0)


def embed_on_server(db_path: Path | None, name: str) -> str | None:
    """Ask a `citedocs serve` running on this index, with an embedder, to index the source `name` and embed
    it (its model is warm); its URL when it took the job (202), None when none can (then the caller embeds)."""
    found = server_status(db_path)
    if found is None or found["embedder"].get("name") is None:
        return None
    reply = post(found["url"], "/sources/reindex", {"name": name})
    return str(found["url"]) if reply is not None and reply.status == 202 else None


def exit_code(status: int) -> int:
    """The CLI's exit code (cli/common.py's EXIT_*) for an error the server answered with `status`."""
    return {404: 3, 401: 4, 403: 4, 422: 1, 429: 5}.get(status, 5 if status >= 500 else 1)
