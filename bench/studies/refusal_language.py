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
import statistics
import sys
import time
from pathlib import Path
from typing import Any, TextIO

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _env import SHARED_DATA, print_header
from refusal_retry import refused_cases

from citedocs.answer.citations import is_refusal
from citedocs.eval.cases import Case, load_cases
from citedocs.eval.metrics import key_fact_recall

JAPANESE = "索引にある文書からはお答えできません。"
ENGLISH = "I can't answer that from the indexed documents."
SEEDS = (11, 12)


def prompts(runs: list[Path]) -> list[tuple[str, str, list[dict[str, Any]]]]:
    """(case id, kind, prompt): answerable ones the model refused, unanswerable ones that reached it."""
    return refused_cases(runs, unanswerable=True)


Replies = dict[tuple[str, str, int], dict[str, Any]]


def load_replies(path: Path) -> Replies:
    """The replies an earlier run of the study kept in `path`, by (case id, variant, seed)."""
    done: Replies = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            done[(row["id"], row["variant"], row["seed"])] = row
    return done


def ask_each_seed(
    client: httpx.Client,
    out: TextIO,
    done: Replies,
    case: tuple[str, str, str],
    messages: list[dict[str, Any]],
    temperature: float,
) -> None:
    """Ask `messages` once per seed of SEEDS (what `done` lacks), keeping each reply in `done` and `out`.
    `case`: (case id, kind, variant name)."""
    case_id, kind, name = case
    for seed in SEEDS:
        if (case_id, name, seed) in done:
            continue
        body = {"messages": messages, "temperature": temperature, "max_tokens": 512, "seed": seed}
        began = time.perf_counter()
        text = client.post("/chat/completions", json=body).json()["choices"][0]["message"]["content"]
        row = {"id": case_id, "kind": kind, "variant": name, "seed": seed, "text": text}
        row["seconds"] = round(time.perf_counter() - began, 1)
        done[(case_id, name, seed)] = row
        out.write(json.dumps(row, ensure_ascii=False) + "\n")
        out.flush()


def print_summary(done: Replies, cases: dict[str, Case], names: tuple[str, ...]) -> None:
    """For each variant and kind: asks, refusals, the answerable replies' key-fact recall, median seconds."""
    for name in names:
        for kind in ("answerable", "unanswerable"):
            rows = [r for r in done.values() if r["variant"] == name and r["kind"] == kind]
            if not rows:
                continue
            refusals = sum(is_refusal(r["text"]) for r in rows)
            line = f"{name:8} {kind:13} asks {len(rows):3}  refused {refusals:3}"
            if kind == "answerable":
                recalls = [
                    key_fact_recall(r["text"], cases[r["id"]].key_facts, is_refusal(r["text"])) for r in rows
                ]
                line += f"  key-fact recall {sum(x or 0.0 for x in recalls) / len(recalls):.3f}"
            print(f"{line}  median {statistics.median(r['seconds'] for r in rows):.1f} s")


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
    done = load_replies(args.out)
    todo = prompts(args.runs)
    print(f"{len(todo)} prompts: {sum(k == 'answerable' for _, k, _ in todo)} answerable")
    with httpx.Client(base_url=args.base_url, timeout=600) as client, args.out.open("a") as out:
        for case_id, kind, prompt in todo:
            for name in ("ja", "en"):
                ask_each_seed(client, out, done, (case_id, kind, name), variant(name, prompt), 0.1)
    print_summary(done, cases, ("ja", "en"))


if __name__ == "__main__":
    main()
