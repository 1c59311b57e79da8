"""After the model refused: do the quotes it confirms, one sentence at a time, add key facts, and none to
unanswerable questions? (answer/confirm.py)

    PYTHONPATH=src .venv/bin/python bench/studies/quote_confirm.py runs --ja eval/baseline/answer-ja-8 ... \
        --base-url http://127.0.0.1:8911/v1
    PYTHONPATH=src .venv/bin/python bench/studies/quote_confirm.py stress --ja --index-db /tmp/ja.db \
        --base-url http://127.0.0.1:8911/v1

`runs`: every case a committed run's model refused or whose answer was withheld (the gate let it through),
once per case id (the first run listing it): the quotes a reader saw (the close-match bar), the sentences
the model is asked about (`to_confirm`), and the quotes with what it confirmed (`choose_quotes(confirmed=)`);
key-fact recall of each over the answerable cases, and how many unanswerable ones show a quote.
`stress`: every unanswerable and off-topic case of the set, the relevance gate set aside (its top-5
hybrid passages from `--index-db`): how many would show a confirmed quote. `mtrag`: the same for the
last turns of ../shared/data/mtrag-dev that its annotators marked UNANSWERABLE and, for contrast, as many
marked ANSWERABLE (the question is the turn with the user turn before it, as a follow-up searches; top-5
keyword passages of the 747). The product's own prompt and parser ask the model (temperature 0, seed 1).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _env import print_header
from bench_quotes import EN, EN_CASES, JA, corpus_chunks, prompt_passages, whole_passages

from citedocs.answer.confirm import confirm_quotes
from citedocs.answer.quotes import Quote, choose_quotes, to_confirm
from citedocs.eval.cases import Case, load_cases
from citedocs.eval.metrics import key_fact_recall
from citedocs.hits import Hit
from citedocs.llm.client import LLMClient


def _recall(case: Case, quotes: list[Quote]) -> float | None:
    if case.kind != "answerable":
        return None
    return key_fact_recall("\n".join(q.text for q in quotes), case.key_facts, False)


async def _one(llm: LLMClient, case: Case, hits: list[Hit]) -> dict[str, Any]:
    now = choose_quotes(case.question, hits, "", model_refused=True)
    pending = to_confirm(case.question, hits)
    checked = await confirm_quotes(llm, case.question, pending, seed=1)
    shown = choose_quotes(case.question, hits, "", model_refused=True, confirmed=checked.confirmed)
    return {
        "id": case.id,
        "kind": case.kind,
        "quotes_before": len(now),
        "asked": checked.asked,
        "confirmed": sorted(checked.confirmed),
        "quotes_after": len(shown),
        "recall_before": _recall(case, now),
        "recall_after": _recall(case, shown),
        "ms": checked.ms,
    }


def _summary(rows: list[dict[str, Any]]) -> None:
    answerable = [r for r in rows if r["kind"] == "answerable"]
    others = [r for r in rows if r["kind"] != "answerable"]
    print(f"answerable cases: {len(answerable)}; unanswerable or off-topic: {len(others)}")
    for when in ("before", "after"):
        facts = sum(r[f"recall_{when}"] for r in answerable)
        silent = sum(r[f"quotes_{when}"] == 0 for r in answerable)
        wrong = sum(r[f"quotes_{when}"] > 0 for r in others)
        print(
            f"  {when:6s}: key facts {facts:.2f} of {len(answerable)} answerable (shown nothing: {silent}); "
            f"unanswerable showing a quote: {wrong} of {len(others)}"
        )
    asked = [r["ms"] for r in rows if r["asked"]]
    if asked:
        asked.sort()
        print(
            f"  asking: {sum(r['asked'] for r in rows)} sentences, median {asked[len(asked) // 2]:.0f} ms a case"
        )


async def _runs(args: argparse.Namespace, cases: dict[str, Case]) -> list[dict[str, Any]]:
    corpus = JA if args.ja else EN
    chunks = corpus_chunks(corpus / "docs", Path(tempfile.mkdtemp()) / "corpus.sqlite3")
    rows, seen = [], set()
    async with LLMClient(args.base_url, "local") as llm:
        for run in args.runs:
            for line in (run / "cases.jsonl").read_text(encoding="utf-8").splitlines():
                record = json.loads(line)
                detail, case = record.get("detail", {}), cases.get(record["id"])
                if case is None or record["id"] in seen or not detail.get("prompt"):
                    continue
                if detail.get("refused_before_model") or not detail.get("refused"):
                    continue
                seen.add(record["id"])
                hits, _ = whole_passages(prompt_passages(detail["prompt"]), chunks)
                rows.append({"run": run.name, **await _one(llm, case, hits)})
                print(json.dumps(rows[-1], ensure_ascii=False), flush=True)
    return rows


async def _stress(args: argparse.Namespace, cases: dict[str, Case]) -> list[dict[str, Any]]:
    from citedocs.service import Citedocs
    from citedocs.settings import Settings

    app = Citedocs(Settings(db=str(args.index_db), _env_file=None))  # type: ignore[call-arg]
    rows = []
    try:
        async with LLMClient(args.base_url, "local") as llm:
            for case in cases.values():
                if case.kind == "answerable":
                    continue
                hits = app.search(case.question, k=5, wait_for_model=True).hits
                rows.append(await _one(llm, case, hits))
                print(json.dumps(rows[-1], ensure_ascii=False), flush=True)
    finally:
        app.close()
    return rows


async def _mtrag(args: argparse.Namespace) -> list[dict[str, Any]]:
    from _env import SHARED_DATA

    from citedocs.service import Citedocs
    from citedocs.settings import Settings

    data = SHARED_DATA / "mtrag-dev"
    tmp = Path(tempfile.mkdtemp())
    docs = tmp / "docs"
    docs.mkdir()
    for i, line in enumerate((data / "passages.jsonl").read_text(encoding="utf-8").splitlines()):
        passage = json.loads(line)
        (docs / f"p{i:04d}.md").write_text(f"# {passage['title']}\n\n{passage['text']}\n", encoding="utf-8")
    tasks = [json.loads(line) for line in (data / "qa_tasks.jsonl").read_text(encoding="utf-8").splitlines()]
    unanswerable = [t for t in tasks if t["answerability"] == ["UNANSWERABLE"]]
    answerable = [t for t in tasks if t["answerability"] == ["ANSWERABLE"]][: len(unanswerable)]
    app = Citedocs(Settings(db=str(tmp / "index.sqlite3"), embedder="none", _env_file=None))  # type: ignore[call-arg]
    rows = []
    try:
        app.add_folder(docs)
        app.index()
        async with LLMClient(args.base_url, "local") as llm:
            for task in unanswerable + answerable:
                said = [turn["text"] for turn in task["input"] if turn["speaker"] == "user"]
                question = " ".join(said[-2:])
                kind = "answerable" if task in answerable else "unanswerable"
                case = Case(id=task["task_id"], question=question, kind=kind)
                hits = app.search(question, k=5).hits
                row = await _one(llm, case, hits)
                row["recall_before"] = row["recall_after"] = 0.0 if kind == "answerable" else None
                rows.append(row)
                print(json.dumps(row, ensure_ascii=False), flush=True)
    finally:
        app.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("what", choices=("runs", "stress", "mtrag"))
    parser.add_argument("runs", type=Path, nargs="*")
    parser.add_argument("--ja", action="store_true", help="the Japanese dev set")
    parser.add_argument("--index-db", type=Path, help="stress: an index of the set's documents")
    parser.add_argument("--base-url", required=True)
    args = parser.parse_intermixed_args()
    print_header(f"Quotes the model confirms after a refusal ({args.what}, {'ja' if args.ja else 'en'})")
    cases = {c.id: c for c in load_cases(*((JA / "cases.jsonl",) if args.ja else EN_CASES))}
    study = {"runs": _runs, "stress": _stress}.get(args.what)
    rows = asyncio.run(study(args, cases) if study else _mtrag(args))
    _summary(rows)


if __name__ == "__main__":
    main()
