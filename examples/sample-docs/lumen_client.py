"""A minimal Python client for the Lumen HTTP API (sample code for the Lumen docs; Lumen is fictional)."""

from __future__ import annotations

import json
import urllib.request

DEFAULT_URL = "http://127.0.0.1:7420"
MAX_BATCH = 4096


class LumenError(Exception):
    """An error answer from lumend; `code` is the LUM-NNN code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


class LumenClient:
    """Talks to one lumend over HTTP. Pass a token for remote daemons (see `lumen token create`)."""

    def __init__(self, base_url: str = DEFAULT_URL, token: str | None = None, timeout: float = 30.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def _request(self, method: str, path: str, body: object | None = None) -> object:
        data = json.dumps(body).encode("utf-8") if body is not None else None
        request = urllib.request.Request(self.base_url + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        with urllib.request.urlopen(request, timeout=self.timeout) as response:
            payload = json.loads(response.read().decode("utf-8"))
        if isinstance(payload, dict) and "error" in payload:
            raise LumenError(payload["error"]["code"], payload["error"]["message"])
        return payload

    def health(self) -> bool:
        """True when GET /v1/health answers {"status": "ok"}."""
        return self._request("GET", "/v1/health") == {"status": "ok"}

    def ingest(self, source: str, lines: list[str]) -> int:
        """Send lines in batches of at most 4096 (the daemon's limit); returns how many were accepted."""
        accepted = 0
        for start in range(0, len(lines), MAX_BATCH):
            batch = lines[start : start + MAX_BATCH]
            result = self._request("POST", "/v1/ingest", {"source": source, "lines": batch})
            accepted += int(result["accepted"])  # type: ignore[index]
        return accepted

    def query(self, q: str, since: str = "1h", limit: int = 1000) -> list[dict[str, str]]:
        """Lines matching `q`, newest first."""
        path = f"/v1/query?q={urllib.request.quote(q)}&since={since}&limit={limit}"
        return list(self._request("GET", path))  # type: ignore[call-overload]


def main() -> None:
    client = LumenClient()
    if not client.health():
        raise SystemExit("lumend is not running; start it with `lumen service start`")
    client.ingest("lumen-client-demo", ["first line", "second line"])
    for line in client.query("demo", since="5m"):
        print(line["ts"], line["text"])


if __name__ == "__main__":
    main()
