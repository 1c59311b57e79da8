"""After a refusal, would asking again on the passages cut to their best sentences answer more?

    PYTHONPATH=src .venv/bin/python bench/studies/focused_retry.py eval/baseline/answer-ja-8 --ja \
        --base-url http://127.0.0.1:8911/v1 --out runs/focused-retry.jsonl

The prompts a run's model refused although the question is answerable, and those of unanswerable questions
that reached it, each asked twice (seeds 11, 12) at the service's second-ask temperature (0.7): "same" is the
prompt as the run sent it (what the service asks again today), "focused" the same question on the same
passages cut to the 8 sentences that match it best (`evidence.score_sentences`) with the sentence before and
after each, every passage keeping its number (one with none keeps its best sentence). The passages are
recovered whole as bench/bench_quotes.py recovers them. Prints refusals by kind, the key-fact recall of the
answerable questions' replies and the median seconds an ask took. Replies are kept in `--out`.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import bench_quotes as bq
from _env import print_header
from refusal_language import ask_each_seed, load_replies, print_summary, prompts

from citedocs.answer.evidence import score_sentences
from citedocs.answer.prompt import build_messages, seeded_fence
from citedocs.eval.cases import load_cases
from citedocs.eval.prompts import prompt_passages
from citedocs.hits import Hit

TOP, AROUND, SEEDS = 8, 1, (11, 12)


def focused(question: str, hits: list[Hit]) -> list[Hit]:
    scored = score_sentences(question, hits)
    best = sorted((s for ss in scored for s in ss if s.score > 0), key=lambda s: -s.score)[:TOP]
    keep = {(s.n, s.index) for s in best}
    out = []
    for n, (hit, sentences) in enumerate(zip(hits, scored, strict=True), start=1):
        by_index = {s.index: s for s in sentences}
        near = {i + d for m, i in keep if m == n for d in range(-AROUND, AROUND + 1)}
        chosen = sorted(near & set(by_index)) or (
            [max(sentences, key=lambda s: s.score).index] if sentences else []
        )
        text = "\n".join(hit.text[by_index[i].span.start : by_index[i].span.end].strip() for i in chosen)
        out.append(dataclasses.replace(hit, text=text))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", type=Path, nargs="+")
    parser.add_argument("--ja", action="store_true", help="runs of the Japanese dev set")
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    print_header("Asking again on the best sentences after a refusal")
    corpus = bq.JA if args.ja else bq.EN
    cases = {c.id: c for c in load_cases(*((bq.JA / "cases.jsonl",) if args.ja else bq.EN_CASES))}
    with tempfile.TemporaryDirectory() as tmp:
        chunks = bq.corpus_chunks(corpus / "docs", Path(tmp) / "corpus.sqlite3")
    done = load_replies(args.out)
    todo = prompts(args.runs)
    print(f"{len(todo)} prompts: {sum(k == 'answerable' for _, k, _ in todo)} answerable")
    with httpx.Client(base_url=args.base_url, timeout=600) as client, args.out.open("a") as out:
        for case_id, kind, prompt in todo:
            question = cases[case_id].question
            hits, _ = bq.whole_passages(prompt_passages(prompt), chunks)
            focused_prompt = build_messages(question, focused(question, hits), seeded_fence(1, question))[0]
            for name, messages in (("same", prompt), ("focused", focused_prompt)):
                ask_each_seed(client, out, done, (case_id, kind, name), messages, 0.7)
    print_summary(done, cases, ("same", "focused"))


if __name__ == "__main__":
    main()
