"""The answer service's own cost per answer: everything but the model.

    .venv/bin/python bench/bench_overhead.py [--answers 60]

A scripted OpenAI-compatible server (tests/fakes) answers at once with a fixed 40-token cited answer, so what is
left is retrieval, the gate, prompt building, SSE, the citation check and repair, over a real socket. The corpus is
the claude-docs pages (keyword-only index, to keep the model-free figure free of the embedder too).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import uvicorn
from _env import SHARED_DATA, median, pct, print_header

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from citedocs.api.app import create_app
from citedocs.service import Citedocs
from citedocs.settings import Settings
from fakes.openai_server import FakeOpenAI, Reply

ANSWER = ["The", " streaming", " API", " sends", " content_block_delta", " events", " [1]", "."] * 5


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--answers", type=int, default=60)
    args = parser.parse_args()
    corpus = SHARED_DATA / "claude-docs-qa" / "docs"
    questions = [
        json.loads(line)["question"] for line in (corpus.parent / "cases.jsonl").open(encoding="utf-8")
    ]
    print_header("citedocs answer-service overhead (model replaced by an instant scripted server)")
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI(default=Reply(tokens=ANSWER)) as fake:
        settings = Settings(
            db=str(Path(tmp) / "i.db"),
            embedder="none",
            llm_base_url=fake.base_url,
            relevance_threshold=0.0,
            max_concurrent=4,
        )
        app = Citedocs(settings)
        app.add_folder(corpus)
        app.index()
        config = uvicorn.Config(create_app(settings, app), host="127.0.0.1", port=0, log_level="error")
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.05)
        port = server.servers[0].sockets[0].getsockname()[1]
        totals, firsts, retrieval = [], [], []
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            for i in range(args.answers):
                question = questions[i % len(questions)]
                t0 = time.perf_counter()
                first = None
                done = {}
                with client.stream("POST", "/ask", json={"question": question}) as response:
                    event = ""
                    for line in response.iter_lines():
                        if line.startswith("event:"):
                            event = line[6:].strip()
                            if event == "token" and first is None:
                                first = time.perf_counter() - t0
                        elif line.startswith("data:") and event == "done":
                            done = json.loads(line[5:])
                totals.append((time.perf_counter() - t0) * 1000)
                firsts.append((first or 0) * 1000)
                retrieval.append(done.get("timings", {}).get("retrieval_ms", 0.0))
        server.should_exit = True
        thread.join(5)
        app.close()
    print("| per answer (ms) | P50 | P95 |")
    print("|---|---|---|")
    print(f"| whole SSE answer, client side | {median(totals):.1f} | {pct(totals, 95):.1f} |")
    print(f"| to first token | {median(firsts):.1f} | {pct(firsts, 95):.1f} |")
    print(f"| retrieval (server timing) | {median(retrieval):.1f} | {pct(retrieval, 95):.1f} |")
    print(f"\n{args.answers} answers of {len(ANSWER)} tokens; the scripted model adds no delay.")


if __name__ == "__main__":
    main()
