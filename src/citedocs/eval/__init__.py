"""Evaluation: cases, pure metrics, bootstrap intervals, run directories and the regression gate.

Metric names used in run files (per case; null where undefined): `file_recall@k`, `section_recall@k`,
`mrr`, `ndcg@10`, `context_recall`, `key_fact_recall`, `correct_refusal_rate`, `wrong_refusal_rate`,
`invalid_citation_rate`, `citation_precision`, `faithfulness`. `gate.is_lower_better` says which are ceilings.
"""

from __future__ import annotations

from citedocs.eval.bootstrap import bootstrap_ci, columns, paired_bootstrap_diff, summarize
from citedocs.eval.cases import Case, Evidence, cases_digest, load_cases
from citedocs.eval.gate import Comparison, Failure, Regression, check, compare, noise
from citedocs.eval.runs import Run, read_run, run_meta, write_run

__all__ = [
    "Case",
    "Comparison",
    "Evidence",
    "Failure",
    "Regression",
    "Run",
    "bootstrap_ci",
    "cases_digest",
    "check",
    "columns",
    "compare",
    "load_cases",
    "noise",
    "paired_bootstrap_diff",
    "read_run",
    "run_meta",
    "summarize",
    "write_run",
]
