"""Follow-ups: how many words of the nearest context the standalone rewrite should add, and the fusion constant.

    PYTHONPATH=src .venv/bin/python bench/studies/followup_queries.py --keep /tmp/fu-keyword
    PYTHONPATH=src .venv/bin/python bench/studies/followup_queries.py --mode hybrid --keep /tmp/fu-hybrid

The sets and the measure are bench/bench_followups.py's (each last question through the answer service's own
`prepare`, no model: the deterministic rewrite). For each setting of `STANDALONE_TERMS` /
`STANDALONE_ANSWER_TERMS` (the words of the last questions and of the last answer the rewrite adds; the
carried words, searched as the third query and read by the gate, stay `CARRY_TERMS` / `CARRY_ANSWER_TERMS`),
and of `FUSION_K`, prints per set: reference in the prompt / ranked first / refused by the gate. 8 and 16 is
the design before 2026-12-06-d (every carried word in the rewrite). The settings are module constants set
here for the study only; the product reads them as they are in answer/conversation.py.
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

import bench_followups as bench

from citedocs.answer import conversation
from citedocs.answer.retriever import LocalRetriever
from citedocs.answer.service import AnswerService
from citedocs.service import Citedocs
from citedocs.settings import Settings

SIZES = ((8, 16), (8, 8), (6, 6), (5, 5), (4, 4), (3, 3), (2, 2), (4, 0), (0, 4))
FUSION = (0.5, 1, 2, 5, 60)


def counts(app: Citedocs, cases: list[dict[str, Any]]) -> str:
    service = AnswerService(LocalRetriever(app, wait_for_model=True), None, app.settings)

    async def run_all() -> list[dict[str, Any]]:
        return [await bench.measure(service, case, True) for case in cases]

    rows = asyncio.run(run_all())
    return "/".join(str(sum(r[key] for r in rows)) for key in ("in_prompt", "first", "refused"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", default="keyword", choices=("keyword", "hybrid"))
    parser.add_argument("--keep", default="", help="the folder of bench_followups.py --keep (reused)")
    args = parser.parse_args()
    embedder = "none" if args.mode == "keyword" else "auto"
    with tempfile.TemporaryDirectory(prefix="citedocs-followups-") as tmp:
        root = Path(args.keep or tmp)
        root.mkdir(parents=True, exist_ok=True)
        mtrag = Citedocs(
            Settings(db=str(root / f"mtrag-{args.mode}.sqlite3"), embedder=embedder, search_mode=args.mode)
        )
        mtrag.add_folder(bench.build_mtrag_corpus(root))
        mtrag.add_folder(bench.SHARED_DATA / "claude-docs-qa" / "docs")
        ja = Citedocs(
            Settings(db=str(root / f"ja-{args.mode}.sqlite3"), embedder=embedder, search_mode=args.mode)
        )
        ja.add_folder(bench.SHARED_DATA / "ja-developers-reference" / "docs")
        for app in (mtrag, ja):
            app.index()
            app.wait_for_embeddings()
        sets = {
            "MTRAG 141": (mtrag, [bench.mtrag_case(t) for t in bench.mtrag_tasks()]),
            "Japanese 25": (
                ja,
                [
                    bench.ja_case(json.loads(line))
                    for line in (bench.EVAL / "ja-followups.jsonl").read_text(encoding="utf-8").splitlines()
                    if line.strip()
                ],
            ),
        }
        print(f"retrieval {args.mode}; per set: reference in the prompt / ranked first / refused by the gate")
        print("| standalone words (questions, answer) | FUSION_K | " + " | ".join(sets) + " |")
        print("|---|---|" + "---|" * len(sets))
        kept = (conversation.STANDALONE_TERMS, conversation.STANDALONE_ANSWER_TERMS, conversation.FUSION_K)
        settings = [(size, kept[2]) for size in SIZES] + [(kept[:2], k) for k in FUSION if k != kept[2]]
        for (words, answer_words), fusion_k in settings:
            conversation.STANDALONE_TERMS, conversation.STANDALONE_ANSWER_TERMS = words, answer_words
            conversation.FUSION_K = fusion_k  # type: ignore[assignment]
            cells = " | ".join(counts(app, cases) for app, cases in sets.values())
            print(f"| {words}, {answer_words} | {fusion_k} | {cells} |")
        conversation.STANDALONE_TERMS, conversation.STANDALONE_ANSWER_TERMS, conversation.FUSION_K = kept
        mtrag.close()
        ja.close()


if __name__ == "__main__":
    main()
