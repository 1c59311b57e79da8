"""One change to the prompt or the decoding at a time, on the exact prompts a committed run's model read.

    PYTHONPATH=src .venv/bin/python bench/studies/bench_prompt_variants.py eval/baseline/answer-distinct-3 \
        --base-url http://127.0.0.1:8911/v1 --variants again,again2,greedy,greedy2,nobrief,reversed \
        --out /tmp/variants.jsonl $CASES

Every case of the run whose row holds its `prompt` is asked once per variant, interleaved per case, through
llama-server's `/v1/chat/completions` (temperature 0.1, 512 tokens, as the service asks): "again*" is the
prompt unchanged, "greedy*" the same at temperature 0, "nobrief" drops "Be brief." from rule 3, "reversed"
puts the sources in the opposite order (the best one last, next to the question, numbers unchanged), "copy"
and "quote" replace rule 3 with an instruction to copy the sources' words or quote their sentences.
Key-fact recall is the `key_fact_recall` metric on the raw text (a refusal scores 0); the difference against
the first variant is paired over cases with a 95% bootstrap interval. `--out` keeps every reply, and a rerun
with the same file asks only what is missing.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from _env import header

from citedocs.answer.citations import is_refusal
from citedocs.eval.cases import load_cases
from citedocs.eval.metrics import key_fact_recall

RULE_3 = "3. Keep numbers, names and code exactly as the source writes them. Be brief."
COPY_RULE_3 = "3. Copy the words of the sources that answer the question; keep numbers, names and code exactly as written."
QUOTE_RULE_3 = "3. Quote the source sentences that answer the question word for word. Be brief."
SOURCES = re.compile(r"(<<<SOURCES (\w+)>>>\n)(.*)(\n<<<END SOURCES \2>>>)", re.S)


def reverse_sources(content: str) -> str:
    found = SOURCES.search(content)
    if found is None:
        return content
    fence = found.group(2)
    blocks = re.findall(
        rf"<<<SOURCE \[\d+\] {fence}>>>.*?<<<END SOURCE \[\d+\] {fence}>>>", found.group(3), re.S
    )
    return content[: found.start(3)] + "\n\n".join(reversed(blocks)) + content[found.end(3) :]


def variant(name: str, prompt: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], float]:
    messages = [dict(m) for m in prompt]
    question = str(messages[-1]["content"])
    if name.startswith("reversed"):
        question = reverse_sources(question)
    if name.startswith("nobrief"):
        question = question.replace(" Be brief.", "")
    if name.startswith("copy"):
        question = question.replace(RULE_3, COPY_RULE_3)
    if name.startswith("quote"):
        question = question.replace(RULE_3, QUOTE_RULE_3)
    messages[-1]["content"] = question
    return messages, 0.0 if name.startswith("greedy") else 0.1


def paired(
    base: dict[str, float], other: dict[str, float], rounds: int = 5000
) -> tuple[float, float, float, int]:
    ids = sorted(set(base) & set(other))
    diffs = [other[i] - base[i] for i in ids]
    rng = random.Random(1)
    means = sorted(statistics.fmean(rng.choices(diffs, k=len(diffs))) for _ in range(rounds))
    return statistics.fmean(diffs), means[int(0.025 * rounds)], means[int(0.975 * rounds)], len(ids)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--cases", action="append", type=Path, required=True)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--variants", default="again,greedy,nobrief,reversed")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    for key, value in header().items():
        print(f"{key}: {value}")
    names = args.variants.split(",")
    facts = {c.id: c for c in load_cases(*args.cases)}
    rows = [json.loads(line) for line in (args.run / "cases.jsonl").read_text(encoding="utf-8").splitlines()]
    rows = [r for r in rows if r["detail"].get("prompt")]
    done: dict[tuple[str, str], dict[str, Any]] = {}
    if args.out.exists():
        for line in args.out.read_text(encoding="utf-8").splitlines():
            reply = json.loads(line)
            done[(reply["id"], reply["v"])] = reply
    with (
        httpx.Client(base_url=args.base_url, timeout=600) as client,
        args.out.open("a", encoding="utf-8") as out,
    ):
        for row in rows:
            for name in names:
                if (row["id"], name) in done:
                    continue
                messages, temperature = variant(name, row["detail"]["prompt"])
                began = time.perf_counter()
                body = {
                    "messages": messages,
                    "temperature": temperature,
                    "max_tokens": 512,
                    "cache_prompt": True,
                }
                reply = client.post("/chat/completions", json=body).json()
                text = reply["choices"][0]["message"]["content"]
                refused = is_refusal(text)
                case = facts[row["id"]]
                recall = key_fact_recall(text, case.key_facts, refused) if case.kind == "answerable" else None
                record = {
                    "id": row["id"],
                    "v": name,
                    "kind": case.kind,
                    "refused": refused,
                    "recall": recall,
                    "tokens": reply["usage"]["completion_tokens"],
                    "s": round(time.perf_counter() - began, 1),
                    "text": text,
                }
                done[(row["id"], name)] = record
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
                out.flush()
    print(f"{len(rows)} prompts from {args.run}; recall over answerable cases with key facts")
    print(
        "| variant | key-fact recall | Δ vs "
        + names[0]
        + " (95% CI) | answerable refused | other kinds refused "
        "| answers at the 512-token cap |"
    )
    print("|---|---|---|---|---|---|")
    base = {i: r["recall"] for (i, v), r in done.items() if v == names[0] and r["recall"] is not None}
    for name in names:
        replies = [r for (_, v), r in done.items() if v == name]
        recalls = {r["id"]: r["recall"] for r in replies if r["recall"] is not None}
        answerable = [r for r in replies if r["kind"] == "answerable"]
        others = [r for r in replies if r["kind"] != "answerable"]
        delta = "—"
        if name != names[0]:
            mean, low, high, n = paired(base, recalls)
            delta = f"{mean:+.3f} [{low:+.3f}, {high:+.3f}] (n={n})"
        print(
            f"| {name} | {statistics.fmean(recalls.values()):.3f} | {delta} | "
            f"{sum(r['refused'] for r in answerable)}/{len(answerable)} | {sum(r['refused'] for r in others)}/{len(others)} | "
            f"{sum(r['tokens'] >= 512 for r in replies)} |"
        )


if __name__ == "__main__":
    main()
