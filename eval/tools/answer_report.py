"""The committed answer-evaluation report: metrics with intervals per run, run-to-run noise, the gate's verdicts,
the judge measured against hand grades, and the hand-scored citation precision.

    .venv/bin/python eval/tools/answer_report.py eval/baseline > eval/baseline/REPORT.md

Reads the run directories written by `citedocs eval answer`, `eval rejudge` and `eval hand-score` under the
folder, and the hand grades in eval/judge-grades*.jsonl. Prints tables only; the prose around them is in
docs/evaluation.md.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

from citedocs.eval.gate import compare_all, noise
from citedocs.eval.rejudge import judge_agreement
from citedocs.eval.runs import read_jsonl, read_run

ORDER = [
    "key_fact_recall",
    "key_fact_recall_synthesis",
    "key_fact_recall_quotes",
    "answer_chars",
    "context_recall",
    "wrong_refusal_rate",
    "correct_refusal",
    "gate_refusal",
    "invalid_citation_rate",
    "citation_support",
    "citation_precision",
    "faithfulness",
    "answer_error",
]
GRADES = {"development": "eval/judge-grades.jsonl", "held-out": "eval/judge-grades-heldout.jsonl"}


def table(runs: dict[str, Path]) -> list[str]:
    loaded = {name: read_run(path) for name, path in runs.items()}
    names = list(loaded)
    lines = ["| metric | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for metric in ORDER:
        cells = []
        for name in names:
            value = loaded[name].metrics.get(metric)
            cells.append(
                "—"
                if value is None
                else f"{value['mean']:.3f} [{value['ci95'][0]:.2f}, {value['ci95'][1]:.2f}] (n={value['n']})"
            )
        lines.append(f"| {metric} | " + " | ".join(cells) + " |")
    return lines


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return read_jsonl(path) if path.exists() else []


def _verdict(base: Path, new: Path, measured: dict[str, float], mismatch: bool = False) -> str:
    flagged = [c for c in compare_all(base, new, measured, allow_case_mismatch=mismatch) if c.regressed]
    if not flagged:
        return "no regression beyond noise"
    return "REGRESSION: " + ", ".join(
        f"{c.metric} {c.diff:+.3f} [{c.ci95[0]:+.3f}, {c.ci95[1]:+.3f}]" for c in flagged
    )


def _paired(base: Path, new: Path, field: str, key: str) -> tuple[int, float, float]:
    """Medians of a per-case number (usage.prompt_tokens, timings.ttft_ms) over the answers both runs made."""
    a, b = read_run(base).details, read_run(new).details
    both = [
        (a[c][field][key], b[c][field][key])
        for c in a
        if c in b and (a[c].get(field) or {}).get(key) and (b[c].get(field) or {}).get(key)
    ]
    if not both:
        return 0, 0.0, 0.0
    return len(both), statistics.median(x for x, _ in both), statistics.median(y for _, y in both)


def main() -> None:
    root = Path(sys.argv[1])
    repo = root.parents[1] if len(root.parts) > 1 else Path(".")
    runs = {p.name: p for p in sorted(root.glob("answer-*")) if (p / "summary.json").exists()}
    current = [runs[n] for n in sorted(runs) if n.removeprefix("answer-current-").isdigit()]
    previous = [runs[n] for n in sorted(runs) if n.removeprefix("answer-sample-").isdigit()]
    repeats = current or previous
    prefix = "answer-current-" if current else "answer-sample-"
    full = runs.get("answer-full")
    out = ["# Answer evaluation baseline", ""]
    for name, path in runs.items():
        meta = read_run(path).meta
        out.append(
            f"- `{name}`: {meta.get('cases')} cases, {meta.get('date')}, commit {meta.get('git_commit')}, "
            f"{meta.get('seconds', '?')} s"
            + (f" (cut from `{meta['subset_of']}`)" if meta.get("subset_of") else "")
        )
    hardware = read_run(full or repeats[0]).meta.get("hardware")
    out += [
        f"- hardware: {json.dumps(hardware)}",
        "- model: Qwen2.5-Coder-1.5B-Instruct Q4_K_M on llama.cpp (CPU); judge: the same model",
        "",
    ]
    out += ["## Metrics (mean, bootstrap 95% interval over cases)", "", *table(runs), ""]
    measured = noise(repeats)
    names = ", ".join(f"`{p.name}`" for p in repeats)
    out += [
        f"## Run-to-run noise (largest paired gap between the means of two of {names}: same code, same cases)",
        "",
    ]
    out += (
        ["| metric | noise |", "|---|---|"]
        + [f"| {k} | {v:.3f} |" for k, v in sorted(measured.items())]
        + [""]
    )
    base = repeats[0]
    out += ["## The gate", ""]
    for name, path in runs.items():
        if path != base and name.startswith(prefix):
            out.append(f"- `compare {base.name} {name}`: {_verdict(base, path, measured)}")
    if full is not None and previous:
        out += ["", "### The prompt change (answer-sample-* → answer-full, on the cases both ran)", ""]
        for path in previous:
            out.append(f"- `{path.name}` → `answer-full`: {_verdict(path, full, measured, mismatch=True)}")
        for field, key, label in (
            ("usage", "prompt_tokens", "prompt tokens"),
            ("timings", "ttft_ms", "TTFT ms"),
        ):
            medians = [_paired(path, full, field, key) for path in previous]
            cells = ", ".join(f"{b:,.0f} → {n:,.0f} (n={k})" for k, b, n in medians)
            out.append(f"- median {label} per answer, each repeated run → answer-full: {cells}")
    out += ["", "## The judge against hand grades", ""]
    out += [
        "| grades | judged run | pairs | agreement | Cohen's kappa | judge says supported | grader says supported |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, rel in GRADES.items():
        graded = _jsonl(repo / rel)
        judged = {name: _jsonl(path / "judged-pairs.jsonl") for name, path in runs.items()}
        judged["all runs (each pair once)"] = [p for pairs in judged.values() for p in pairs]
        for name, pairs in judged.items():
            agreement = judge_agreement(pairs, graded)
            if agreement.get("pairs"):
                out.append(
                    f"| {label} ({len(graded)}) | {name} | {agreement['pairs']} | {agreement['agreement']:.3f} | "
                    f"{agreement['kappa']:.2f} | {agreement['judge_precision']:.3f} | "
                    f"{agreement['human_precision']:.3f} |"
                )
    print("\n".join(out))


if __name__ == "__main__":
    main()
