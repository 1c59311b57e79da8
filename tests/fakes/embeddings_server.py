"""A fake OpenAI-compatible `/v1/embeddings` server on a real socket, for hermetic search tests.

Vectors are hashed bags of stemmed words (deterministic, 512 dimensions), so texts that share words are close.
`hold` (a threading.Event) blocks every request until set: a model that is still loading. `delay_s` slows
each request; `calls` counts requests; `model_dim` can be changed to simulate another model.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

_WORD = re.compile(r"[a-z0-9]+")


def hashed_vector(text: str, dim: int) -> list[float]:
    vec = np.zeros(dim, dtype=np.float32)
    for word in _WORD.findall(text.lower()):
        stem = word[:-1] if word.endswith("s") else word
        h = int.from_bytes(hashlib.blake2b(stem.encode(), digest_size=4).digest(), "little")
        vec[h % dim] += 1.0
    norm = float(np.linalg.norm(vec)) or 1.0
    return [float(x) for x in vec / norm]


class FakeEmbeddings:
    def __init__(self, dim: int = 512, delay_s: float = 0.0) -> None:
        self.dim = dim
        self.delay_s = delay_s
        self.hold = threading.Event()
        self.hold.set()
        self.calls = 0
        self.texts = 0
        self._server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @contextmanager
    def running(self) -> Iterator[FakeEmbeddings]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.hold.wait(30)
                if fake.delay_s:
                    time.sleep(fake.delay_s)
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                fake.calls += 1
                fake.texts += len(texts)
                data = [{"index": i, "embedding": hashed_vector(t, fake.dim)} for i, t in enumerate(texts)]
                payload = json.dumps({"object": "list", "data": data, "model": body.get("model")}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.hold.set()
            self._server.shutdown()
            self._server.server_close()
