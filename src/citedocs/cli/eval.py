"""`citedocs eval …`: retrieval and answer evaluation, and the regression gate."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from citedocs.cli.common import DbOption, JsonOption, out, print_json, run, settings_for

eval_app = typer.Typer(help="Evaluate retrieval and answers; gate regressions.", no_args_is_help=True)

CasesOption = Annotated[
    list[Path],
    typer.Option("--cases", help="Case file(s) (JSONL); overlays with key_facts/kind merge by id."),
]
RunDirOption = Annotated[
    Path | None, typer.Option("--run-dir", help="Write summary.json and cases.jsonl here.")
]


def _print_metrics(title: str, result: dict[str, object]) -> None:
    table = Table("metric", "mean", "95% CI", title=title)
    for name, value in result.items():
        if isinstance(value, dict) and "mean" in value:
            lo, hi = value["ci95"]
            table.add_row(name, f"{value['mean']:.3f}", f"[{lo:.3f}, {hi:.3f}]")
    out.print(table)
    extras = {k: v for k, v in result.items() if not isinstance(v, dict)}
    out.print(" · ".join(f"{k}: {v}" for k, v in extras.items() if v is not None))


@eval_app.command("retrieval")
def eval_retrieval(
    corpus: Annotated[Path, typer.Option("--corpus", help="Folder of documents the cases are about.")],
    cases: CasesOption,
    mode: Annotated[str, typer.Option("--mode", help="keyword | semantic | hybrid")] = "hybrid",
    run_dir: RunDirOption = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """File- and section-level recall@k, MRR and nDCG@10 with bootstrap 95% intervals."""
    from citedocs.eval.cases import load_cases
    from citedocs.eval.retrieval import run_retrieval_eval

    loaded = run(lambda: load_cases(*cases))
    result = run(lambda: run_retrieval_eval(corpus, loaded, settings_for(db), mode=mode, run_dir=run_dir))
    if as_json:
        print_json(result)
    else:
        _print_metrics(f"retrieval ({mode}) on {corpus}", result)


@eval_app.command("answer")
def eval_answer(
    corpus: Annotated[Path, typer.Option("--corpus", help="Folder of documents the cases are about.")],
    cases: CasesOption,
    run_dir: RunDirOption = None,
    judge: Annotated[bool, typer.Option("--judge/--no-judge", help="Judge faithfulness with an LLM.")] = True,
    judge_base_url: Annotated[
        str | None,
        typer.Option(
            "--judge-base-url", help="OpenAI-compatible endpoint for the judge (default: the answer model)."
        ),
    ] = None,
    judge_model: Annotated[str, typer.Option("--judge-model", help="Judge model name.")] = "judge",
    limit: Annotated[int | None, typer.Option("--limit", help="Only the first N cases.")] = None,
    every: Annotated[
        int | None, typer.Option("--every", help="Only every N-th case of each kind (same mix).")
    ] = None,
    index_db: Annotated[
        Path | None, typer.Option("--index-db", help="Keep the corpus index here between runs.")
    ] = None,
    k: Annotated[
        int | None, typer.Option("-k", "--top-k", help="Sources per answer (default CITEDOCS_TOP_K).")
    ] = None,
    seed: Annotated[
        int | None,
        typer.Option(
            "--seed",
            help="Draw each prompt's fence and the model's sampling from this number, so runs with the same "
            "seed send the same prompts (default: a new random fence each time, as when answering).",
        ),
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Answers with the configured LLM: key-fact recall, refusals, citation precision, faithfulness (95% CIs)."""
    from citedocs.eval.answers import run_answer_eval
    from citedocs.eval.cases import load_cases
    from citedocs.llm.client import LLMClient

    settings = settings_for(db)
    if k is not None:
        settings = settings.model_copy(update={"top_k": k})
    judge_client = None
    if judge_base_url:
        judge_client = LLMClient.from_settings(
            settings.model_copy(update={"llm_base_url": judge_base_url, "llm_model": judge_model})
        )
    loaded = run(lambda: load_cases(*cases))
    result = run(
        lambda: run_answer_eval(
            corpus,
            loaded,
            settings,
            run_dir=run_dir,
            judge_client=judge_client,
            use_judge=judge,
            limit=limit,
            every=every,
            index_db=index_db,
            seed=seed,
        )
    )
    if as_json:
        print_json(result)
    else:
        _print_metrics(f"answers on {corpus}", result)


@eval_app.command("rejudge")
def eval_rejudge(
    run_dir: Annotated[Path, typer.Argument(help="An answer run directory.")],
    cases: CasesOption,
    index_db: Annotated[
        Path, typer.Option("--index-db", help="The index the run used (eval answer --index-db).")
    ],
    out_dir: Annotated[Path, typer.Option("--out", help="Where to write the re-judged run.")],
    judge_base_url: Annotated[
        str, typer.Option("--judge-base-url", help="OpenAI-compatible endpoint of the judge.")
    ],
    judge_model: Annotated[str, typer.Option("--judge-model", help="Judge model name.")] = "judge",
    grades: Annotated[
        Path | None, typer.Option("--grades", help="Hand-graded pairs (JSONL) to measure the judge.")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Judge a run's answers again (no regeneration) and, with --grades, report agreement with hand grades."""
    from citedocs.eval.cases import load_cases
    from citedocs.eval.rejudge import judge_agreement, rejudge_run
    from citedocs.eval.runs import read_jsonl
    from citedocs.llm.client import LLMClient
    from citedocs.service import Citedocs

    settings = settings_for(str(index_db))
    client = LLMClient.from_settings(
        settings.model_copy(update={"llm_base_url": judge_base_url, "llm_model": judge_model})
    )
    loaded = run(lambda: load_cases(*cases))
    app = Citedocs(settings)
    try:
        result = run(lambda: rejudge_run(app, run_dir, out_dir, loaded, client))
    finally:
        app.close()
    if grades is not None:
        result["agreement"] = judge_agreement(read_jsonl(out_dir / "judged-pairs.jsonl"), read_jsonl(grades))
    if as_json:
        print_json(result)
    else:
        out.print(" · ".join(f"{k}: {v}" for k, v in result.items()))


@eval_app.command("hand-score")
def eval_hand_score(
    run_dir: Annotated[Path, typer.Argument(help="A judged answer run (with judged-pairs.jsonl).")],
    grades: Annotated[list[Path], typer.Option("--grades", help="Hand-graded pairs (JSONL); repeatable.")],
    out_dir: Annotated[Path, typer.Option("--out", help="Where to write the hand-scored run.")],
    as_json: JsonOption = False,
) -> None:
    """Citation precision and faithfulness from hand grades instead of the judge (graded cases only)."""
    from citedocs.eval.rejudge import hand_score
    from citedocs.eval.runs import read_jsonl

    graded = [grade for path in grades for grade in read_jsonl(path)]
    result = run(lambda: hand_score(run_dir, out_dir, graded))
    if as_json:
        print_json(result)
    else:
        out.print(" · ".join(f"{k}: {v}" for k, v in result.items()))


@eval_app.command("check")
def eval_check(
    run_dir: Annotated[Path, typer.Argument(help="A run directory written by `citedocs eval … --run-dir`.")],
    cases: CasesOption,
    floors: Annotated[Path, typer.Option("--floors", help="TOML/JSON file of floors and ceilings.")],
    every: Annotated[
        int | None, typer.Option("--every", help="The run used every N-th case of each kind.")
    ] = None,
) -> None:
    """Fail unless the run covers exactly the current cases and clears every floor."""
    from citedocs.eval.cases import load_cases, sample_cases
    from citedocs.eval.gate import check
    from citedocs.eval.retrieval import retrieval_cases
    from citedocs.eval.runs import read_run

    loaded = run(lambda: load_cases(*cases))
    if every and every > 1:
        loaded = sample_cases(loaded, every)
    if run(lambda: read_run(run_dir)).meta.get("kind") == "retrieval":
        loaded = retrieval_cases(loaded)
    failures = run(lambda: check(run_dir, loaded, floors))
    for failure in failures:
        out.print(f"[red]FAIL[/red] {failure}")
    if failures:
        raise typer.Exit(1)
    out.print(f"[green]ok[/green] {run_dir} clears {floors}")


@eval_app.command("noise")
def eval_noise(
    run_dirs: Annotated[list[Path], typer.Argument(help="Two or more runs of the same code.")],
    output: Annotated[
        Path | None, typer.Option("--out", help="Write the measured noise to this JSON file.")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Run-to-run noise per metric: the range of the means across repeated runs of unchanged code."""
    from citedocs.eval.gate import noise, write_noise

    measured = run(lambda: noise(run_dirs))
    if output is not None:
        run(lambda: write_noise(output, measured, run_dirs))
    if as_json:
        print_json(measured)
    else:
        for name, value in sorted(measured.items()):
            out.print(f"{name}: {value:.4f}")


@eval_app.command("compare")
def eval_compare(
    base: Annotated[Path, typer.Argument(help="Baseline run directory.")],
    new: Annotated[Path, typer.Argument(help="New run directory.")],
    noise_file: Annotated[
        Path | None, typer.Option("--noise", help="Noise JSON from `citedocs eval noise`.")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Flag a regression only when the paired 95% interval excludes zero and the drop exceeds the noise."""
    from citedocs.eval.gate import compare, read_noise

    measured = run(lambda: read_noise(noise_file)) if noise_file else None
    regressions = run(lambda: compare(base, new, measured))
    if as_json:
        print_json([r.__dict__ if hasattr(r, "__dict__") else str(r) for r in regressions])
    for r in regressions:
        out.print(f"[red]REGRESSION[/red] {r}")
    if regressions:
        raise typer.Exit(1)
    if not as_json:
        out.print("no regression beyond noise")
