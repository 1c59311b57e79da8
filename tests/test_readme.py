"""The README's first screen, run as it is written: the demo command serves the sample docs from its own index."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def _first_screen_commands() -> list[str]:
    return re.findall(r"```bash\n(.+?)\n```", README.split("## Use", 1)[0], re.DOTALL)


def test_the_first_screen_has_the_start_and_the_test_command() -> None:
    start, tests = _first_screen_commands()[:2]
    assert "pip install -e ." in start and "citedocs serve --folder examples/sample-docs" in start
    steps = [step.strip() for step in start.split("&&")]
    assert steps.index(".venv/bin/citedocs model install") < len(steps) - 1  # the model before the server
    assert 'pip install -e ".[dev]"' in tests and "pytest -q" in tests


def test_the_demo_serves_the_sample_docs_and_leaves_the_default_index_alone(tmp_path: Path) -> None:
    start = _first_screen_commands()[0]
    serve = start.split("&&")[-1].strip().split()
    assert serve[0] == ".venv/bin/citedocs"
    shutil.copytree(REPO / "examples" / "sample-docs", tmp_path / "examples" / "sample-docs")
    env = {**os.environ, "CITEDOCS_PORT": "0", "CITEDOCS_EMBEDDER": "none"}  # no fixed port in tests
    proc = subprocess.Popen(
        [sys.executable, "-m", "citedocs", *serve[1:]],
        cwd=tmp_path,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        assert proc.stdout is not None
        url = ""
        for line in proc.stdout:
            if match := re.search(r"serving (http://\S+?)/ ", line):
                url = match.group(1)
                break
        assert url, "citedocs serve did not say where it serves"
        request = urllib.request.Request(
            url + "/search",
            data=json.dumps({"query": "Lumen", "k": 3}).encode(),
            headers={"Content-Type": "application/json"},
        )
        deadline = time.monotonic() + 30  # the folder is indexed in the background while the server answers
        while not (hits := json.loads(urllib.request.urlopen(request, timeout=60).read())["hits"]):
            assert time.monotonic() < deadline, "the sample docs were not searchable within 30 s"
            time.sleep(0.1)
        assert all("sample-docs" in hit["path"] for hit in hits)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    assert proc.returncode == 0
    assert (tmp_path / ".demo" / "index.sqlite3").exists()
    default_index = Path(os.environ["XDG_DATA_HOME"]) / "citedocs" / "index.sqlite3"
    assert not default_index.exists()
