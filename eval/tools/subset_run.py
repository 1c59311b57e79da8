"""Cut a run down to the cases `--every N` would have chosen, so a full run can stand as one of the repeated
sample runs that measure run-to-run noise (same cases, same digest, values unchanged).

    .venv/bin/python eval/tools/subset_run.py eval/baseline/answer-full --every 3 $CASES --out eval/baseline/answer-current-1
"""

from __future__ import annotations

import argparse
from pathlib import Path

from citedocs.eval.cases import cases_digest, load_cases, sample_cases
from citedocs.eval.runs import read_jsonl, read_run, write_pairs, write_run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--every", type=int, required=True)
    parser.add_argument("--cases", action="append", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    chosen = sample_cases(load_cases(*args.cases), args.every)
    ids = {c.id for c in chosen}
    run = read_run(args.run)
    missing = ids - set(run.per_case)
    if missing:
        raise SystemExit(f"{args.run} lacks {len(missing)} of the chosen cases, e.g. {sorted(missing)[:3]}")
    meta = {
        **run.meta,
        "cases_digest": cases_digest(chosen),
        "cases": len(chosen),
        "subset_of": str(args.run),
        "every": args.every,
    }
    kept = [i for i in run.per_case if i in ids]  # the run's order: the bootstrap resamples cases by position
    write_run(
        args.out,
        {i: run.per_case[i] for i in kept},
        meta,
        {i: run.details[i] for i in kept if i in run.details},
    )
    pairs_file = args.run / "judged-pairs.jsonl"
    if pairs_file.exists():
        write_pairs(args.out, [p for p in read_jsonl(pairs_file) if p["case"] in ids])
    print(f"{args.out}: {len(ids)} cases of {len(run.per_case)}")


if __name__ == "__main__":
    main()
