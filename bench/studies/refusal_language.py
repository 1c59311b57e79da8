"""Does the language of the refusal sentence the prompt asks for change how often the model refuses?

    PYTHONPATH=src .venv/bin/python bench/studies/refusal_language.py eval/baseline/answer-ja-5 \
        eval/baseline/answer-ja-6 eval/baseline/answer-ja-7 --base-url http://127.0.0.1:8911/v1 \
        --out bench/reports/refusal-language-2026-12-06.jsonl

The Japanese runs' prompts that the model refused although the question is answerable (every fact in the
prompt), and those of unanswerable questions that reached the model, each asked twice (seeds 11, 12) at the
service's first-ask temperature (0.1) through llama-server's `/v1/chat/completions`: "ja" is the prompt as the
run sent it (rule 4 names the Japanese refusal sentence), "en" the same prompt with rule 4 naming the English
one. Prints refusals by kind and the key-fact recall (analysed matcher) of the answerable questions' replies.
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
from _env import SHARED_DATA, print_header

from citedocs.answer.citations import is_refusal
from citedocs.eval.cases import load_cases
from citedocs.eval.metrics import key_fact_recall

JAPANESE = "索引にある文書からはお答えできません。"
ENGLISH = "I can't answer that from the indexed documents."
SEEDS = (11, 12)


def prompts(runs: list[Path]) -> list[tuple[str, str, list[dict[str, Any]]]]:
    """(case id, kind, prompt): answerable ones the model refused, unanswerable ones that reached it."""
    seen: dict[str, tuple[str, str, list[dict[str, Any]]]] = {}
    for run in runs:
        for line in (run / "cases.jsonl").read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            detail = record.get("detail", {})
            if detail.get("refused_before_model") or not detail.get("prompt"):
                continue
            refused = is_refusal(str(detail.get("raw_answer") or detail.get("answer") or ""))
            if refused or detail.get("kind") == "unanswerable":
                seen.setdefault(record["id"], (record["id"], detail["kind"], detail["prompt"]))
    return list(seen.values())


def variant(name: str, prompt: list[dict[str, Any]]) -> list[dict[str, Any]]:
    messages = [dict(m) for m in prompt]
    if name == "en":
        content = str(messages[-1]["content"])
        assert JAPANESE in content, "a prompt of the Japanese runs names the Japanese refusal"
        messages[-1]["content"] = content.replace(JAPANESE, ENGLISH)
    return messages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", type=Path, nargs="+")
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    print_header("The refusal sentence's language and the model's refusals (Japanese questions)")
    cases = {c.id: c for c in load_cases(SHARED_DATA / "ja-developers-reference" / "cases.jsonl")}
    done: dict[tuple[str, str, int], dict[str, Any]] = {}
    if args.out.exists():
        for line in args.out.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            done[(row["id"], row["variant"], row["seed"])] = row
    todo = prompts(args.runs)
    print(f"{len(todo)} prompts: {sum(k == 'answerable' for _, k, _ in todo)} answerable")
    with httpx.Client(base_url=args.base_url, timeout=600) as client, args.out.open("a") as out:
        for case_id, kind, prompt in todo:
            for name in ("ja", "en"):
                for seed in SEEDS:
                    if (case_id, name, seed) in done:
                        continue
                    body = {
                        "messages": variant(name, prompt),
                        "temperature": 0.1,
                        "max_tokens": 512,
                        "seed": seed,
                    }
                    began = time.perf_counter()
                    text = client.post("/chat/completions", json=body).json()["choices"][0]["message"][
                        "content"
                    ]
                    row = {"id": case_id, "kind": kind, "variant": name, "seed": seed, "text": text}
                    row["seconds"] = round(time.perf_counter() - began, 1)
                    done[(case_id, name, seed)] = row
                    out.write(json.dumps(row, ensure_ascii=False) + "\n")
                    out.flush()
    for name in ("ja", "en"):
        for kind in ("answerable", "unanswerable"):
            rows = [r for r in done.values() if r["variant"] == name and r["kind"] == kind]
            refusals = sum(is_refusal(r["text"]) for r in rows)
            line = f"{name}  {kind:13} asks {len(rows):3}  refused {refusals:3}"
            if kind == "answerable" and rows:
                recalls = [
                    key_fact_recall(r["text"], cases[r["id"]].key_facts, is_refusal(r["text"])) for r in rows
                ]
                line += f"  key-fact recall {sum(x or 0.0 for x in recalls) / len(recalls):.3f}"
            print(line)


if __name__ == "__main__":
    main()
