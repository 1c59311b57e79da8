"""`citedocs bench …`: retrieval benchmarks with the production pipeline."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from citedocs.cli.common import DbOption, JsonOption, out, print_json, run, settings_for

bench_app = typer.Typer(
    help="Benchmarks (quality and speed) with the production pipeline.", no_args_is_help=True
)


@bench_app.command("beir")
def bench_beir(
    folder: Annotated[
        Path, typer.Argument(help="BEIR data set folder (corpus.jsonl, queries.jsonl, qrels/).")
    ],
    split: Annotated[str, typer.Option("--split", help="qrels split to score.")] = "test",
    mode: Annotated[str, typer.Option("--mode", help="bm25 | vector | hybrid")] = "hybrid",
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """nDCG@10, recall@100, MRR@10, index time and query latency on a BEIR data set."""
    from citedocs.eval.beir import run_beir

    result = run(lambda: run_beir(folder, settings_for(db), split=split, mode=mode))
    if as_json:
        print_json(result)
    else:
        out.print(" · ".join(f"{k}: {v}" for k, v in result.items()))
