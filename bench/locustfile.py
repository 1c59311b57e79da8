"""Locust load test of `POST /ask` (server-sent events) in a closed loop.

Each user asks one question after another. Besides Locust's own row for the request (time to the end of the
stream), custom rows record time to first token (`ttft`), the whole answer (`answer`), answers refused with
503 (`busy`, not failures: the service sheds load on purpose; the user then waits Retry-After, at most 5 s) and answers that ended in an `error` event.

    citedocs serve &                                   # the API on 127.0.0.1:8765
    CITEDOCS_BENCH_CASES=../shared/data/claude-docs-qa/cases.jsonl \\
      locust -f bench/locustfile.py --headless -H http://127.0.0.1:8765 -u 4 -r 4 -t 2m --csv bench/out/ask-u4

Questions come from CITEDOCS_BENCH_CASES (a cases.jsonl, `question` per line) or a small built-in list.
Against several replicas, CITEDOCS_BENCH_HOSTS lists their base URLs (comma-separated) and users are spread
over them in turn, as a round-robin load balancer would (-H is then only Locust's label).
"""

from __future__ import annotations

import itertools
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from locust import HttpUser, events, task

FALLBACK_QUESTIONS = [
    "Which port does the server listen on by default?",
    "How do I limit the number of answers in flight?",
    "How do I install citedocs?",
]


def load_questions() -> list[str]:
    path = os.environ.get("CITEDOCS_BENCH_CASES")
    if not path:
        return FALLBACK_QUESTIONS
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["question"] for line in lines if line.strip()] or FALLBACK_QUESTIONS


QUESTIONS: Iterator[str] = itertools.cycle(load_questions())
HOSTS: Iterator[str] = itertools.cycle(
    [h.strip().rstrip("/") for h in os.environ.get("CITEDOCS_BENCH_HOSTS", "").split(",") if h.strip()]
    or [""]
)


def sse_events(lines: Iterator[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    name, data = "message", []
    for line in lines:
        if not line:
            if data:
                yield name, json.loads("\n".join(data))
            name, data = "message", []
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())


class AskUser(HttpUser):
    """One person asking questions back to back (no think time: a closed loop)."""

    def _record(self, kind: str, name: str, started: float, exception: Exception | None = None) -> None:
        events.request.fire(
            request_type=kind,
            name=name,
            response_time=(time.perf_counter() - started) * 1000.0,
            response_length=0,
            exception=exception,
            context={},
        )

    def on_start(self) -> None:
        self.base = next(HOSTS)  # "" means Locust's -H

    @task
    def ask(self) -> None:
        question = next(QUESTIONS)
        started = time.perf_counter()
        with self.client.post(
            f"{self.base}/ask", json={"question": question}, stream=True, catch_response=True, name="/ask"
        ) as response:
            if response.status_code == 503:
                response.success()
                self._record("SSE", "busy (503)", started)
                time.sleep(min(5.0, float(response.headers.get("Retry-After") or 1)))
                return
            if response.status_code != 200:
                response.failure(f"HTTP {response.status_code}: {response.text[:200]}")
                return
            first_token = False
            outcome = None
            lines = (line.decode("utf-8") for line in response.iter_lines())
            for event, data in sse_events(lines):
                if event == "token" and not first_token:
                    first_token = True
                    self._record("SSE", "ttft", started)
                elif event in ("done", "error"):
                    outcome = (event, data)
            if outcome is None:
                response.failure("the stream ended without a done or error event")
            elif outcome[0] == "error":
                response.failure(f"error event: {outcome[1].get('message')}")
                self._record("SSE", "answer", started, RuntimeError(str(outcome[1].get("stage"))))
            else:
                response.success()
                self._record("SSE", "refused" if outcome[1].get("refused") else "answer", started)
