"""`graphwright tools`: the tools a graph's runs may call, built-in and from MCP servers."""

from __future__ import annotations

import json
import sys

import typer
from rich.console import Console
from rich.table import Table

from graphwright.cli_output import orchestrator


def tools_command(
    graph: str = typer.Option("agent", "--graph", help="Registered graph name."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Every tool with its source, risk, trust and whether it needs approval.

    Starts the configured MCP servers (GRAPHWRIGHT_MCP_SERVERS) to list their tools.
    Once a run has read untrusted output, every write needs approval, whatever this says.
    """
    from graphwright.tools.catalog import catalog

    orch = orchestrator()
    infos = catalog(orch.tools(graph), orch.policy)
    if as_json:
        sys.stdout.write(
            json.dumps([i.model_dump() for i in infos], ensure_ascii=False, indent=2) + "\n"
        )
        return
    table = Table(title=f"tools of {graph}")
    for column in ("tool", "source", "risk", "trust", "needs approval", "idempotent"):
        table.add_column(column, overflow="fold")
    for i in infos:
        table.add_row(
            i.name,
            i.source,
            i.risk,
            i.trust,
            "yes" if i.needs_approval else "no",
            "yes" if i.idempotent else "",
        )
    Console().print(table)
