"""`citedocs token create / list / revoke`: who may use a shared server (docs/teams.md).

These run on the machine that holds the index (or with its PostgreSQL URL), as its owner: whoever can open
the index can already read every document in it.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

import typer

from citedocs.cli.common import DbOption, JsonOption, console, out, print_json, run, service

token_app = typer.Typer(
    help="Tokens for a shared server: create, list, revoke (see docs/teams.md).", no_args_is_help=True
)


def _when(epoch: float | None) -> str:
    return "never" if epoch is None else dt.datetime.fromtimestamp(epoch).strftime("%Y-%m-%d %H:%M")


@token_app.command("create")
def create(
    name: Annotated[str, typer.Argument(help="A name for who holds it, e.g. support-team or ci-agent.")],
    scope: Annotated[
        Literal["search", "ask", "admin"],
        typer.Option(
            "--scope", help="search (search, read, status), ask (+ answers), admin (+ sources, tokens)."
        ),
    ] = "search",
    source: Annotated[
        list[str] | None, typer.Option("--source", help="Only this folder or site (repeat for several).")
    ] = None,
    expires: Annotated[float | None, typer.Option("--expires", help="Days until it stops working.")] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Create a token and print it once: only its hash is kept, so copy it now."""
    with service(db) as app_:
        secret, record = run(lambda: app_.create_token(name, scope, source or (), expires))
    if as_json:
        print_json({**record.to_dict(), "token": secret})
        return
    out.print(secret)
    seen = "every source" if record.sources is None else ", ".join(record.sources)
    console.print(
        f"created token {record.name!r}: scope {record.scope}, sees {seen}, expires "
        f"{_when(record.expires)}. It is shown only now; send it as `Authorization: Bearer <token>`."
    )


@token_app.command("list")
def list_tokens(db: DbOption = None, as_json: JsonOption = False) -> None:
    """The tokens, never their secrets."""
    with service(db) as app_:
        tokens = run(app_.list_tokens)
    if as_json:
        print_json([t.to_dict() for t in tokens])
        return
    if not tokens:
        out.print("No tokens yet. Create one with `citedocs token create NAME --scope search`.")
    for t in tokens:
        state = "revoked" if t.revoked is not None else f"expires {_when(t.expires)}"
        seen = "all sources" if t.sources is None else ", ".join(t.sources)
        out.print(f"{t.name}  {t.scope}  {seen}  created {_when(t.created)}  {state}")


@token_app.command("revoke")
def revoke(
    name: Annotated[str, typer.Argument(help="The token's name, as `citedocs token list` shows it.")],
    db: DbOption = None,
) -> None:
    """Stop a token from working, on every server using this index, from its next request."""
    with service(db) as app_:
        record = run(lambda: app_.revoke_token(name))
    out.print(f"revoked {record.name}")


def register(app: typer.Typer) -> None:
    app.add_typer(token_app, name="token")
