"""A stand-in llama-server executable: an OpenAI-compatible fake (fakes.openai_server) on the port it is
given, which appends `{"pid", "args", "openblas_threads"}` to a record file each time it starts, so tests see the arguments a
real process got and count its starts. It answers the Prometheus-port question of examples/sample-docs with
a citation of the passage that holds 9464, and refuses anything else. With `hold`, each answer waits until
that file exists (creating `hold` + ".waiting" first), so a test can keep an answer in flight."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parents[1]

_SCRIPT = """\
import json, os, re, signal, sys, time
sys.path.insert(0, {tests!r})
from fakes.openai_server import FakeOpenAI, Reply
args = sys.argv[1:]
if "--help" in args:
    print("usage: llama-server -m FILE --port N")
    sys.exit(0)
with open({record!r}, "a") as f:
    blas = os.environ.get("OPENBLAS_NUM_THREADS")
    f.write(json.dumps({{"pid": os.getpid(), "args": args, "openblas_threads": blas}}) + "\\n")
def respond(request):
    hold = {hold!r}
    if hold:
        open(hold + ".waiting", "w").close()
        while not os.path.exists(hold):
            time.sleep(0.05)
    prompt = request.body["messages"][-1]["content"]
    for n, body in re.findall(r"<<<SOURCE \\[(\\d+)\\] \\w+>>>[^\\n]*\\n(.*?)<<<END SOURCE", prompt, re.S):
        if "9464" in body:
            return Reply(tokens=["Prometheus metrics are served on port 9464 ", f"[{{n}}]."])
    return Reply(tokens=["I cannot find that in the documents."])
with FakeOpenAI(responder=respond, port=int(args[args.index("--port") + 1])):
    signal.sigwait([signal.SIGTERM, signal.SIGINT])
"""


def write_llama_server(path: Path, record: Path, hold: Path | None = None) -> Path:
    """Write the stand-in at `path` (executable), recording its starts in `record`; returns `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    script = _SCRIPT.format(tests=str(TESTS), record=str(record), hold=str(hold) if hold else "")
    path.write_text(f"#!{sys.executable}\n" + script, encoding="utf-8")
    path.chmod(0o755)
    return path


def starts(record: Path) -> list[dict[str, Any]]:
    """Each start of the stand-in so far: `{"pid": ..., "args": [...], "openblas_threads": ...}`, oldest first."""
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines() if line]
