"""What the answer model makes of perfect evidence: the ceiling that retrieval and evidence selection cannot pass.

    PYTHONPATH=src .venv/bin/python bench/studies/bench_oracle.py --index-db /tmp/idx.db $CASES \
        --base-url http://127.0.0.1:8911/v1 [--out oracle.jsonl]

For every answerable case with key facts, the model reads only the sections the case's `evidence` names (the
indexed passages of that file under that heading, repeats dropped, at most 5), in the production prompt
(`build_messages`, whole passages, today's rules), at the production temperature. Each answer is scored as
`eval answer` scores it: refusal, withheld by the citation check, key-fact recall. "Facts in the prompt" is the
share of key facts whose text the gold passages hold (case-insensitive), i.e. what a quoting answer could reach.
--index-db must hold the claude-docs corpus (any `eval answer --index-db` run leaves one).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import httpx
from _env import header

from citedocs.answer.citations import check_citations, is_refusal, withheld_reason
from citedocs.answer.generation import TEMPERATURE
from citedocs.answer.prompt import build_messages
from citedocs.eval.cases import load_cases
from citedocs.eval.metrics import key_fact_recall
from citedocs.hits import Hit
from citedocs.search.distinct import PASSAGE_OVERLAP, repeats
from citedocs.settings import Settings

MAX_PASSAGES = 5


def gold_passages(db: sqlite3.Connection, evidence: list[dict[str, str]]) -> list[Hit]:
    hits = []
    for item in evidence:
        name = item["file"].rsplit("/", 1)[-1]
        rows = db.execute(
            "SELECT c.chunk_id, d.path, c.heading, c.line_start, c.line_end, c.text FROM chunks c "
            "JOIN documents d ON d.id = c.document_id WHERE d.path LIKE ? ORDER BY c.ord",
            ("%/" + name,),
        )
        for chunk_id, path, heading, start, end, text in rows:
            if heading == item["heading"] or heading.endswith("> " + item["heading"]):
                hits.append(
                    Hit(
                        chunk_id=chunk_id,
                        path=path,
                        source="gold",
                        heading=heading,
                        page=None,
                        line_start=start,
                        line_end=end,
                        score=1.0,
                        text=text,
                    )
                )
    dropped = set(repeats(hits, PASSAGE_OVERLAP))
    return [h for i, h in enumerate(hits) if i not in dropped][:MAX_PASSAGES]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index-db", type=Path, required=True)
    parser.add_argument("--cases", action="append", type=Path, required=True)
    parser.add_argument("--base-url", required=True, help="OpenAI-compatible endpoint of the answer model")
    parser.add_argument("--model", default="local")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    for key, value in header().items():
        print(f"{key}: {value}")
    settings = Settings()
    evidence = {}
    for path in args.cases:
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if "evidence" in record:
                evidence[record["id"]] = record["evidence"]
    db = sqlite3.connect(f"file:{args.index_db}?mode=ro", uri=True)
    client = httpx.Client(base_url=args.base_url.rstrip("/"), timeout=600)
    out = args.out.open("w", encoding="utf-8") if args.out else None
    rows = []
    for case in load_cases(*args.cases):
        if case.kind != "answerable" or not case.key_facts or case.id not in evidence:
            continue
        hits = gold_passages(db, evidence[case.id])
        if not hits:
            print(f"{case.id}: no indexed passage under its evidence heading; skipped")
            continue
        messages, _ = build_messages(case.question, hits)
        started = time.perf_counter()
        reply = client.post(
            "/chat/completions",
            json={
                "model": args.model,
                "messages": messages,
                "temperature": TEMPERATURE,
                "max_tokens": settings.llm_max_tokens,
                "cache_prompt": True,
            },
        ).json()
        answer = reply["choices"][0]["message"]["content"]
        report = check_citations(answer, hits)
        refused = is_refusal(answer)
        withheld = not refused and withheld_reason(report) is not None
        gold_text = "\n".join(h.text for h in hits).lower()
        row = {
            "id": case.id,
            "passages": len(hits),
            "prompt_tokens": reply["usage"]["prompt_tokens"],
            "seconds": round(time.perf_counter() - started, 1),
            "refused": refused,
            "withheld": withheld,
            "key_fact_recall": key_fact_recall(answer, case.key_facts, refused or withheld),
            "facts_in_prompt": sum(f.lower() in gold_text for f in case.key_facts) / len(case.key_facts),
            "answer": answer,
        }
        rows.append(row)
        if out:
            out.write(json.dumps(row) + "\n")
    if out:
        out.close()
    n = len(rows)
    complete = [r for r in rows if r["facts_in_prompt"] == 1.0]
    print(
        f"cases: {n} · passages a prompt (mean) {statistics.mean(r['passages'] for r in rows):.2f} · "
        f"prompt tokens P50 {statistics.median(r['prompt_tokens'] for r in rows):,.0f}"
    )
    print(f"facts in the prompt: {statistics.mean(r['facts_in_prompt'] for r in rows):.3f}")
    print(
        f"key-fact recall: {statistics.mean(r['key_fact_recall'] for r in rows):.3f} "
        f"({statistics.mean(r['key_fact_recall'] for r in complete):.3f} on the {len(complete)} cases whose "
        f"prompt holds every key fact)"
    )
    refused = sum(r["refused"] for r in rows)
    withheld = sum(r["withheld"] for r in rows)
    print(
        f"wrong refusals: {(refused + withheld) / n:.3f} ({refused} refused by the model, {withheld} withheld)"
    )


if __name__ == "__main__":
    main()
