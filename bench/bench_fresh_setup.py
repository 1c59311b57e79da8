"""The README's start command on a fresh machine: a new clone, a clean HOME, then one question to /ask.

    nice -n 10 python bench/bench_fresh_setup.py [--repo PATH] [--work /tmp/fresh-setup] [--port 8799]

Runs the first ```bash block of README.md as it is written (with CITEDOCS_PORT set so it does not collide), in
a fresh `git clone` under --work with HOME and the XDG dirs pointing into --work (no pip cache, no model, no
llama-server), times each `&&` step and the wait until `serve` says where it serves, asks one question about
the sample docs through `POST /ask?stream=false`, prints the answer and its checked citations, the disk each
part uses, then stops the server and runs the same command again (the second run must start in seconds).
"""

from __future__ import annotations

import argparse
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _env import print_header

QUESTION = "Which port serves the Prometheus metrics, and how do I turn metrics off?"


def du(path: Path) -> int:
    if not path.exists():
        return 0
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def start_command(readme: Path) -> list[str]:
    text = readme.read_text(encoding="utf-8").split("## Use", 1)[0]
    return [step.strip() for step in re.findall(r"```bash\n(.+?)\n```", text, re.DOTALL)[0].split("&&")]


def run_start(
    steps: list[str], clone: Path, env: dict[str, str], log: Path
) -> tuple[dict[str, float], subprocess.Popen[str], str]:
    """Each step but the last to completion (timed); the last (serve) until it prints its URL."""
    times: dict[str, float] = {}
    with open(log, "a", encoding="utf-8") as out:
        for step in steps[:-1]:
            began = time.monotonic()
            subprocess.run(
                step, shell=True, cwd=clone, env=env, check=True, stdout=out, stderr=subprocess.STDOUT
            )
            times[step] = time.monotonic() - began
    began = time.monotonic()
    proc = subprocess.Popen(
        steps[-1],
        shell=True,
        cwd=clone,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    assert proc.stdout is not None
    url = ""
    for line in proc.stdout:
        with open(log, "a", encoding="utf-8") as out:
            out.write(line)
        if match := re.search(r"serving (http://\S+?)/ ", line):
            url = match.group(1)
            break
    times[steps[-1]] = time.monotonic() - began
    if not url:
        raise SystemExit(f"serve did not start; see {log}")
    return times, proc, url


def get(url: str) -> dict[str, object]:
    return json.loads(urllib.request.urlopen(url, timeout=30).read())  # type: ignore[no-any-return]


def ask(url: str) -> tuple[float, dict[str, object]]:
    began = time.monotonic()
    while True:  # the model server loads in the background after serve starts
        request = urllib.request.Request(
            url + "/ask?stream=false",
            data=json.dumps({"question": QUESTION}).encode(),
            headers={"Content-Type": "application/json"},
        )
        try:
            body = json.loads(urllib.request.urlopen(request, timeout=900).read())
            return time.monotonic() - began, body
        except urllib.error.HTTPError as exc:
            if exc.code != 503 or time.monotonic() - began > 900:
                raise
            time.sleep(2)


def stop(proc: subprocess.Popen[str]) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(60)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repo", default=str(Path(__file__).resolve().parents[1]))
    parser.add_argument("--work", default="/tmp/fresh-setup")
    parser.add_argument("--port", default="8799")
    args = parser.parse_args()
    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    home, clone = work / "home", work / "fresh"
    home.mkdir(parents=True)
    subprocess.run(["git", "clone", "-q", args.repo, str(clone)], check=True)
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("CITEDOCS_", "VIRTUAL_ENV", "PYTHONPATH"))
    }
    env.update(
        HOME=str(home),
        XDG_DATA_HOME=str(home / ".local/share"),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
        CITEDOCS_PORT=args.port,
    )
    print_header("The README's start command from a clean HOME and a fresh clone (shared 2-core machine)")
    steps = start_command(clone / "README.md")
    print("command:", " && ".join(steps), "\n")
    log = work / "setup.log"
    total = time.monotonic()
    times, proc, url = run_start(steps, clone, env, log)
    print("## first run (s)")
    for step, seconds in times.items():
        print(f"- {seconds:8.1f}  {step}")
    print(f"- {time.monotonic() - total:8.1f}  total, until `serve` printed its URL\n")
    try:
        seconds, body = ask(url)
        data = body["data"]  # type: ignore[index]
        print(f"## POST /ask ({seconds:.1f} s, including the model server's start)")
        print("model:", get(url + "/stats").get("model"))
        print("question:", QUESTION)
        print("answer:", " ".join(str(data["answer"]).split()))  # type: ignore[index]
        for key in ("citations", "invalid_citations", "refused", "truncated"):
            print(f"{key}:", data.get(key))  # type: ignore[union-attr]
        for source in data["sources"]:  # type: ignore[index]
            if source["n"] in (data.get("citations") or []):  # type: ignore[union-attr]
                print(f"  [{source['n']}] {Path(source['path']).name} {source.get('heading')}")
    finally:
        stop(proc)
    print("\n## disk (MB)")
    data_dir = home / ".local/share/citedocs"
    models = data_dir / "models"
    for name, size in [
        ("models + llama-server", du(models)),
        ("  of which llama-server", du(models / "bin") + du(models / "prebuilt")),
        ("venv", du(clone / ".venv")),
        ("pip cache", du(home / ".cache/pip")),
        ("demo index", du(clone / ".demo")),
    ]:
        print(f"- {size / 1e6:9.1f}  {name}")
    again = time.monotonic()
    times, proc, url = run_start(steps, clone, env, log)
    stop(proc)
    print("\n## second run (s)")
    for step, seconds in times.items():
        print(f"- {seconds:8.1f}  {step}")
    print(f"- {time.monotonic() - again:8.1f}  total, until `serve` printed its URL")


if __name__ == "__main__":
    main()
