"""Does asking again undo the model's refusal of an answerable question, and keep its refusal of an unanswerable one?

    PYTHONPATH=src .venv/bin/python bench/studies/refusal_retry.py eval/baseline/answer-gate-2 ... \
        --base-url http://127.0.0.1:8911/v1 --asks 3 --variants again,warm,look

Every case a committed run's model refused (after the relevance gate let it through; the run keeps the exact
prompt) is asked `--asks` times per variant through llama-server's `/v1/chat/completions`: "again" is the
prompt unchanged at the service's temperature (0.1), "warm" the same at 0.7, "look" appends one line to the
question asking the model to look again before refusing. For each kind of case (answerable, unanswerable) it
prints how many asks were refusals, and the key-fact recall of the answerable ones' replies, so a retry's gain
(refusals of answerable questions undone) can be weighed against its cost (unanswerable ones answered).
Replies are kept in `--out`; a rerun asks only what is missing.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _env import print_header

from citedocs.answer.citations import is_refusal
from citedocs.eval.cases import load_cases
from citedocs.eval.metrics import key_fact_recall

LOOK = (
    "\nBefore you reply with the refusal sentence, look again at every source: if any of them states something "
    "that answers the question, answer with it and cite it."
)


def variant(name: str, prompt: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], float]:
    messages = [dict(m) for m in prompt]
    if name.startswith("look"):
        messages[-1]["content"] = str(messages[-1]["content"]) + LOOK
    return messages, 0.7 if name.startswith("warm") else 0.1


def refused_cases(
    runs: list[Path], unanswerable: bool = False
) -> list[tuple[str, str, list[dict[str, Any]]]]:
    """(case id, kind, prompt) of each case whose model refused (after the gate let it through); with
    `unanswerable`, also every unanswerable case that reached the model, refused or not."""
    seen: dict[str, tuple[str, str, list[dict[str, Any]]]] = {}
    for run in runs:
        for line in (run / "cases.jsonl").read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            detail = record.get("detail", {})
            if detail.get("refused_before_model") or not detail.get("prompt"):
                continue
            refused = is_refusal(str(detail.get("raw_answer") or detail.get("answer") or ""))
            if refused or (unanswerable and detail.get("kind") == "unanswerable"):
                seen.setdefault(record["id"], (record["id"], detail["kind"], detail["prompt"]))
    return list(seen.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", type=Path, nargs="+")
    parser.add_argument("--cases", action="append", type=Path, required=True)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--asks", type=int, default=3)
    parser.add_argument("--variants", default="again,warm,look")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    print_header("Asking again after the model refused")
    cases = {c.id: c for c in load_cases(*args.cases)}
    done: dict[tuple[str, str, int], dict[str, Any]] = {}
    if args.out.exists():
        for line in args.out.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            done[(row["id"], row["variant"], row["ask"])] = row
    names = args.variants.split(",")
    todo = refused_cases(args.runs)
    print(f"{len(todo)} refused cases: {sum(k == 'answerable' for _, k, _ in todo)} answerable")
    with httpx.Client(base_url=args.base_url, timeout=300) as client, args.out.open("a") as out:
        for case_id, kind, prompt in todo:
            for ask in range(args.asks):
                for name in names:
                    if (case_id, name, ask) in done:
                        continue
                    messages, temperature = variant(name, prompt)
                    began = time.perf_counter()
                    reply = client.post(
                        "/chat/completions",
                        json={"messages": messages, "temperature": temperature, "max_tokens": 512},
                    ).json()
                    text = reply["choices"][0]["message"]["content"]
                    row = {"id": case_id, "kind": kind, "variant": name, "ask": ask, "text": text}
                    row["seconds"] = round(time.perf_counter() - began, 1)
                    done[(case_id, name, ask)] = row
                    out.write(json.dumps(row, ensure_ascii=False) + "\n")
                    out.flush()
    for name in names:
        for kind in ("answerable", "unanswerable"):
            rows = [r for r in done.values() if r["variant"] == name and r["kind"] == kind]
            refusals = sum(is_refusal(r["text"]) for r in rows)
            recalls = [
                key_fact_recall(r["text"], cases[r["id"]].key_facts, is_refusal(r["text"]))
                for r in rows
                if kind == "answerable" and r["id"] in cases
            ]
            recall = sum(x or 0.0 for x in recalls) / len(recalls) if recalls else None
            print(f"{name:6} {kind:13} asks {len(rows):3}  refused {refusals:3}  recall {recall}")
        for r in sorted(done.values(), key=lambda r: (r["id"], r["ask"])):
            if r["variant"] == name and r["kind"] == "unanswerable" and not is_refusal(r["text"]):
                print(f"   answered {r['id']} ({name} #{r['ask']}): {r['text'][:160]!r}")


if __name__ == "__main__":
    main()
