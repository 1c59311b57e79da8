"""The committed answer-evaluation report: metrics with intervals per run, run-to-run noise, and the gate's verdicts.

    .venv/bin/python bench/answer_report.py eval/baseline > eval/baseline/REPORT.md

Reads the run directories written by `citedocs eval answer` (and `citedocs eval rejudge`) under the folder.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from citedocs.eval.gate import compare_all, noise
from citedocs.eval.runs import read_run

ORDER = ["key_fact_recall", "context_recall", "wrong_refusal_rate", "correct_refusal", "gate_refusal",
         "invalid_citation_rate", "citation_support", "citation_precision", "faithfulness", "answer_error"]  # fmt: skip


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


def main() -> None:
    root = Path(sys.argv[1])
    runs = {p.name: p for p in sorted(root.glob("answer-*")) if (p / "summary.json").exists()}
    repeats = [runs[n] for n in sorted(runs) if n.removeprefix("answer-sample-").isdigit()]
    meta = read_run(repeats[0]).meta
    out = ["# Answer evaluation baseline", ""]
    out += [f"- date: {meta.get('date')}", f"- hardware: {json.dumps(meta.get('hardware'))}",
            "- model: Qwen2.5-Coder-1.5B-Instruct Q4_K_M on llama.cpp (CPU), judge: the same model",
            f"- cases: {meta.get('cases')} (every 3rd case of each kind: `--every 3`), digest {meta.get('cases_digest')}",
            f"- git commit: {meta.get('git_commit')}", ""]  # fmt: skip
    out += ["## Metrics (mean, bootstrap 95% interval over cases)", "", *table(runs), ""]
    measured = noise(repeats)
    out += ["## Run-to-run noise (range of the means over the repeated runs of the same code)", ""]
    out += (
        ["| metric | noise |", "|---|---|"]
        + [f"| {k} | {v:.3f} |" for k, v in sorted(measured.items())]
        + [""]
    )
    base = repeats[0]
    out += ["## The gate", ""]
    for name, path in runs.items():
        if path == base:
            continue
        comparisons = compare_all(base, path, measured)
        flagged = [c for c in comparisons if c.regressed]
        verdict = "REGRESSION: " + ", ".join(f"{c.metric} {c.diff:+.3f} [{c.ci95[0]:+.3f}, {c.ci95[1]:+.3f}]"
                                             for c in flagged) if flagged else "no regression beyond noise"  # fmt: skip
        out.append(f"- `compare {base.name} {name}`: {verdict}")
    print("\n".join(out))


if __name__ == "__main__":
    main()
