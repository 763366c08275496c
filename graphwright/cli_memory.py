"""The CLI's `memory` commands: list, forget and migrate what users asked to be remembered."""

from __future__ import annotations

import typer
from rich.table import Table

from graphwright.cli_output import JSON, console, emit_json, friendly, orchestrator
from graphwright_errors import NotFoundError

memory_app = typer.Typer(
    rich_markup_mode="markdown", help="Long-term memory: what users asked to be remembered."
)


@memory_app.command("list")
@friendly
def memory_list(user: str = typer.Argument(..., help="User id."), as_json: bool = JSON) -> None:
    """The user's records and the project's, with their sources."""
    records = orchestrator().memories(user)
    if as_json:
        emit_json([r.model_dump(mode="json") for r in records])
        return
    table = Table(title=f"memories of {user}")
    for column in ("scope", "kind", "key", "value", "source thread", "replaced values"):
        table.add_column(column, overflow="fold")
    for r in records:
        table.add_row(
            r.scope,
            r.kind,
            r.key,
            r.value,
            r.source.thread_id,
            ", ".join(h.value for h in r.history),
        )
    console.print(table)


@memory_app.command("forget")
@friendly
def memory_forget(
    user: str = typer.Argument(..., help="User id."),
    key: str = typer.Argument(..., help="Record key, e.g. language."),
    as_json: bool = JSON,
) -> None:
    """Remove the user's record KEY from every later recall."""
    if not orchestrator().forget(user, key):
        raise NotFoundError(f"user {user!r} has no memory {key!r}")
    emit_json({"forgot": key, "user": user}) if as_json else console.print(
        f"forgot {key} for {user}"
    )


@memory_app.command("migrate")
@friendly
def memory_migrate(as_json: bool = JSON) -> None:
    """Move memories kept by an older graphwright in the users' store into its own store."""
    moved = orchestrator().adopt_memories()
    emit_json({"moved": moved}) if as_json else console.print(f"moved {moved} memories")
