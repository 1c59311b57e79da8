"""Search over the CLI, MCP (stdio and HTTP) and HTTP lists a passage that repeats a better one only once, and
ranks the next distinct passage in its place; the library's raw ranking (evaluations, answers) keeps repeats.

The folder is what scraped documentation looks like: a page's markdown and its rendered text say one
paragraph twice, in two files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from citedocs.hits import Hit
from citedocs.llm.llama import free_port
from citedocs.search.distinct import PASSAGE_OVERLAP, distinct_hits, distinct_indexes, repeats
from citedocs.service import Citedocs
from citedocs.settings import Settings
from citedocs.text.terms import Terms, coverage, extract_terms
from conftest import shared
from fakes.live_server import live_process
from test_processes import HANDSHAKE, rpc

LIMITS = (
    "Rate limits apply per organization. The rate limits are 50 requests per minute and 40,000 input tokens "
    "per minute; a request over the rate limits gets HTTP 429 with a retry-after header."
)
QUERY = "rate limits requests per minute"


def docs_folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "limits.md").write_text(f"# Limits\n\n## Rate limits\n\n{LIMITS}\n", encoding="utf-8")
    (docs / "limits-rendered.txt").write_text(f"Limits\nRate limits\n{LIMITS}\n", encoding="utf-8")
    (docs / "tiers.md").write_text(
        "# Tiers\n\nHigher usage tiers raise the rate limits: tier 2 allows 1,000 requests per minute.\n",
        encoding="utf-8",
    )
    (docs / "batches.md").write_text(
        "# Batches\n\nA message batch does not count against the per minute rate limits of requests.\n",
        encoding="utf-8",
    )
    return docs


def env_for(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "CITEDOCS_DB": str(tmp_path / "index.sqlite3"), "CITEDOCS_EMBEDDER": "none"}


def assert_distinct(paths: list[str]) -> None:
    names = [Path(p).name for p in paths]
    assert len(names) == 3, names
    assert not {"limits.md", "limits-rendered.txt"} <= set(names), f"the repeated paragraph twice: {names}"
    assert {"tiers.md", "batches.md"} <= set(names), (
        f"a distinct passage did not take the repeat's place: {names}"
    )


def hit(text: str, n: int) -> Hit:
    return Hit(
        path=f"/d/{n}.md",
        source="/d",
        heading="",
        page=None,
        line_start=1,
        line_end=1,
        chunk_id=str(n),
        score=1.0 / n,
        text=text,
    )


def test_a_repeat_gives_its_place_to_the_next_distinct_hit() -> None:
    hits = [hit(LIMITS, 1), hit(LIMITS.upper(), 2), hit("Tiers raise the limits.", 3), hit("Batches.", 4)]
    assert repeats(hits, 0.8) == [1]
    assert [h.chunk_id for h in distinct_hits(hits, 3, 0.8)] == ["1", "3", "4"]
    assert [h.chunk_id for h in distinct_hits(hits, 3, 0.0)] == ["1", "2", "3"]


def test_distinct_indexes_reading_only_what_it_needs_agree_with_repeats_over_the_whole_list() -> None:
    tiers = "Higher usage tiers raise the rate limits: tier 2 allows 1,000 requests per minute."
    texts = [LIMITS, LIMITS.upper(), tiers, "Batches cost half.", tiers.lower(), "(see config.toml), 8080;"]
    hits = [hit(t, n + 1) for n, t in enumerate(texts)]
    dropped = set(repeats(hits, 0.8))
    assert dropped == {1, 4}
    for k in range(1, len(texts) + 1):
        assert distinct_indexes(texts, k, 0.8) == [i for i in range(len(texts)) if i not in dropped][:k]
    assert distinct_indexes(texts, 3, 0.0) == [0, 1, 2]


def _by_terms_alone(texts: list[str], overlap: float) -> list[int]:
    """The filter's rule with every pair compared by content terms (no plain-word screen)."""
    kept: list[int] = []
    for i, text in enumerate(texts):
        terms = extract_terms(text)
        if not (terms and any(coverage(terms, extract_terms(texts[j])) >= overlap for j in kept)):
            kept.append(i)
    return kept


def test_both_screens_change_no_decision_on_real_passages(tmp_path: Path) -> None:
    """The screen skips analysing passages whose plain words (or keyword-index sketches, as searches read
    them) overlap too little to be repeats; over the claude-docs questions' top 10 (where 1 in 15 pairs is a
    repeat) every decision is the rule's own. A sketch screen of 0.75 changes 2 of the 60 lists, 0.9 13."""
    docs = shared("claude-docs-qa", "docs")
    questions = [json.loads(line)["question"] for line in shared("claude-docs-qa", "cases.jsonl").open()]
    app = Citedocs(Settings(db=str(tmp_path / "i.db"), embedder="none", _env_file=None))  # type: ignore[call-arg]
    try:
        app.add_folder(docs)
        app.index()
        assert app.engine.keyword.wait(60)
        repeated = 0
        for question in questions:
            hits = app.search(question, k=10, mode="keyword").hits
            texts = [h.text for h in hits]
            view = app.engine.keyword.view()
            assert view is not None
            rowids = [app.store.chunk_by_id(h.chunk_id).rowid for h in hits]  # type: ignore[union-attr]
            sketches = view.sketches(rowids)
            assert None not in sketches
            expected = _by_terms_alone(texts, PASSAGE_OVERLAP)
            repeated += len(texts) - len(expected)
            assert distinct_indexes(texts, len(texts), PASSAGE_OVERLAP) == expected, question
            assert distinct_indexes(texts, 5, PASSAGE_OVERLAP) == expected[:5], question
            assert distinct_indexes(texts, len(texts), PASSAGE_OVERLAP, sketches) == expected, question
            assert distinct_indexes(texts, 5, PASSAGE_OVERLAP, sketches) == expected[:5], question
        assert repeated >= 20, "the corpus no longer has repeats to test the screen on"
    finally:
        app.close()


def test_an_inflected_copy_passes_the_screen_and_is_a_repeat() -> None:
    inflected = LIMITS.replace("requests", "request").replace("limits", "limit").replace("gets", "get")
    texts = [LIMITS, inflected, "Batches cost half."]
    assert distinct_indexes(texts, 3, PASSAGE_OVERLAP) == [0, 2]


def test_terms_of_a_text_are_the_terms_of_its_tokens_and_coverage_weighs_them_by_kind() -> None:
    terms = extract_terms("(see config.toml), 8080; useState's $1,024.50% values.", keep_parts=True)
    assert terms.numbers == {"8080", "1024.50"}
    assert terms.identifiers == {"config.toml", "usestate's"}
    assert terms.words == {"config", "toml", "usest", "valu"}
    needed = Terms(
        frozenset({"8080"}), frozenset({"config.toml", "8080"}), frozenset({"valu", "config.toml"})
    )
    held = Terms(frozenset({"8080"}), frozenset(), frozenset({"config.toml"}))
    # 8080 counts once, as a number (3); config.toml as an identifier (2), not found among the words; valu 1
    assert coverage(needed, held) == 3 / 6
    assert coverage(needed, held, needed.weighted()) == 3 / 6


def test_the_library_ranking_keeps_repeats_and_distinct_search_does_not(tmp_path: Path) -> None:
    app = Citedocs(Settings(db=str(tmp_path / "index.sqlite3"), embedder="none"))
    try:
        app.add_folder(docs_folder(tmp_path))
        app.index()
        raw = [Path(h.path).name for h in app.search(QUERY, k=3, mode="keyword").hits]
        assert {"limits.md", "limits-rendered.txt"} <= set(raw), raw  # the folder does repeat itself
        assert_distinct([h.path for h in app.search(QUERY, k=3, mode="keyword", distinct=True).hits])
        every = app.search(QUERY, k=3, mode="keyword", distinct=True)
        assert len(every.hits) == 3
    finally:
        app.close()


def test_distinct_search_reading_chunks_as_needed_returns_the_filter_over_the_whole_ranking(
    tmp_path: Path,
) -> None:
    """On the Claude docs (45 pages scraped twice over in places), with its 65 questions: the distinct search,
    which reads the first k chunks and more only when a repeat is dropped, returns what the duplicate filter
    keeps of the whole raw ranking of 2k, with the same scores and snippets."""
    corpus = shared("claude-docs-qa")
    app = Citedocs(Settings(db=str(tmp_path / "index.sqlite3"), embedder="none"))
    try:
        app.add_folder(corpus / "docs")
        app.index()
        questions = [
            json.loads(line)["question"]
            for line in (corpus / "cases.jsonl").read_text("utf-8").split("\n")
            if line
        ]
        dropped = 0
        for question in questions:
            raw = app.search(question, k=10, mode="keyword").hits
            kept = [raw[i] for i in distinct_indexes([h.text for h in raw], 5, PASSAGE_OVERLAP)]
            found = app.search(question, k=5, mode="keyword", distinct=True).hits
            assert [h.to_dict() for h in found] == [h.to_dict() for h in kept], question
            dropped += len(kept) < len(raw[:5]) or [h.chunk_id for h in kept] != [h.chunk_id for h in raw[:5]]
        assert dropped > 5  # repeats were dropped and the next chunks read
    finally:
        app.close()


def test_cli_search_json_lists_each_passage_once(tmp_path: Path) -> None:
    docs, env = docs_folder(tmp_path), env_for(tmp_path)
    subprocess.run(
        [sys.executable, "-m", "citedocs", "add", str(docs)],
        env=env,
        capture_output=True,
        check=True,
        timeout=120,
    )
    proc = subprocess.run(
        [sys.executable, "-m", "citedocs", "search", QUERY, "-k", "3", "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert_distinct([h["path"] for h in json.loads(proc.stdout)["hits"]])


def test_mcp_search_over_stdio_lists_each_passage_once(tmp_path: Path) -> None:
    docs = docs_folder(tmp_path)
    # add_folder over MCP indexes in the background; `citedocs add` has indexed when it exits
    subprocess.run(
        [sys.executable, "-m", "citedocs", "add", str(docs)],
        env=env_for(tmp_path),
        capture_output=True,
        check=True,
        timeout=120,
    )
    lines = [
        *HANDSHAKE,
        rpc(3, "tools/call", name="search", arguments={"query": QUERY, "top_k": 3, "mode": "keyword"}),
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "citedocs", "mcp"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        env=env_for(tmp_path),
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    replies = {r.get("id"): r for r in map(json.loads, filter(str.strip, proc.stdout.splitlines()))}
    result = replies[3]["result"]
    assert result["isError"] is False, result
    assert_distinct([h["path"] for h in result["structuredContent"]["hits"]])


def mcp_call(url: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One tools/call over streamable HTTP (initialize first; the server is stateless per request)."""
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
        init = client.post("/mcp", content=HANDSHAKE[0])
        session = init.headers.get("mcp-session-id")
        if session:
            client.headers["mcp-session-id"] = session
        client.post("/mcp", content=HANDSHAKE[1])
        reply = client.post("/mcp", content=rpc(2, "tools/call", name=name, arguments=arguments))
    body = reply.text
    if reply.headers.get("content-type", "").startswith("text/event-stream"):
        body = next(line[5:] for line in body.splitlines() if line.startswith("data:"))
    return dict(json.loads(body)["result"])


def test_http_search_and_mcp_over_http_list_each_passage_once(tmp_path: Path) -> None:
    docs, env, port = docs_folder(tmp_path), env_for(tmp_path), free_port()
    url = f"http://127.0.0.1:{port}"
    subprocess.run(
        [sys.executable, "-m", "citedocs", "add", str(docs)],
        env=env,
        capture_output=True,
        check=True,
        timeout=120,
    )
    command = [sys.executable, "-m", "citedocs", "serve", "--port", str(port)]
    with live_process(command, env, tmp_path / "serve.log", url):
        reply = httpx.post(f"{url}/search", json={"query": QUERY, "k": 3, "mode": "keyword"}, timeout=60)
        assert reply.status_code == 200, reply.text
        assert_distinct([h["path"] for h in reply.json()["hits"]])
        result = mcp_call(url, "search", {"query": QUERY, "top_k": 3, "mode": "keyword"})
        assert result["isError"] is False, result
        assert_distinct([h["path"] for h in result["structuredContent"]["hits"]])
