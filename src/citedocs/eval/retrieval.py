"""`citedocs eval retrieval`: index a corpus, run every answerable case's question, score the ranking."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from citedocs.eval.bootstrap import columns, summarize
from citedocs.eval.cases import Case
from citedocs.eval.metrics import file_mrr, file_ndcg_at_k, file_recall_at_k, section_recall_at_k
from citedocs.eval.runs import run_meta, write_run
from citedocs.service import Citedocs
from citedocs.settings import Settings

DEPTH = 10


def score_ranking(case: Case, ranked: Sequence[tuple[str, str]]) -> dict[str, float | None]:
    files = [e.file for e in case.evidence]
    sections = [(e.file, e.heading) for e in case.evidence if e.heading]
    return {
        "file_recall@1": file_recall_at_k(ranked, files, 1),
        "file_recall@3": file_recall_at_k(ranked, files, 3),
        "file_recall@5": file_recall_at_k(ranked, files, 5),
        "file_recall@10": file_recall_at_k(ranked, files, 10),
        "section_recall@1": section_recall_at_k(ranked, sections, 1) if sections else None,
        "section_recall@3": section_recall_at_k(ranked, sections, 3) if sections else None,
        "section_recall@5": section_recall_at_k(ranked, sections, 5) if sections else None,
        "mrr": file_mrr(ranked, files, DEPTH),
        "ndcg@10": file_ndcg_at_k(ranked, files, 10),
    }


def retrieval_cases(cases: Sequence[Case]) -> list[Case]:
    """Retrieval is scored on the cases that have evidence to find."""
    return [case for case in cases if case.answerable]


def run_retrieval_eval(
    corpus: Path,
    cases: Sequence[Case],
    settings: Settings,
    *,
    mode: str = "hybrid",
    run_dir: Path | None = None,
    app: Citedocs | None = None,
) -> dict[str, Any]:
    """Index `corpus` into a throwaway index (unless an app is given) and score each answerable case."""
    cases = retrieval_cases(cases)
    tmp = None
    if app is None:
        tmp = tempfile.TemporaryDirectory(prefix="citedocs-eval-")
        app = Citedocs(settings.model_copy(update={"db": str(Path(tmp.name) / "eval.db")}))
        app.add_folder(corpus)
        app.index()
        app.wait_for_embeddings()
    per_case: dict[str, dict[str, float | None]] = {}
    details: dict[str, dict[str, Any]] = {}
    latencies = []
    note = None
    try:
        for case in cases:
            if not case.answerable:
                continue
            t0 = time.perf_counter()
            result = app.search(case.question, k=DEPTH, mode=mode)
            latencies.append((time.perf_counter() - t0) * 1000)
            note = note or result.note
            ranked = [(h.path, h.heading) for h in result.hits]
            per_case[case.id] = score_ranking(case, ranked)
            details[case.id] = {"top5": [f"{Path(p).name} § {h}" for p, h in ranked[:5]]}
    finally:
        if tmp is not None:
            app.close()
            tmp.cleanup()
    metrics = summarize(columns(per_case))
    latencies.sort()
    meta = run_meta(
        list(cases),
        settings.model_dump(mode="json"),
        kind="retrieval",
        mode=mode,
        corpus=str(corpus),
        note=note,
    )
    if run_dir is not None:
        write_run(run_dir, per_case, meta, details)
    return {
        "kind": "retrieval",
        "mode": mode,
        "cases": len(per_case),
        "note": note,
        "query_ms_p50": round(latencies[len(latencies) // 2], 2) if latencies else None,
        **metrics,
        "run_dir": str(run_dir) if run_dir else None,
    }
