"""The `graphwright` command line (Typer + Rich), a thin layer over `Orchestrator`.

User errors print one line and exit 2; infrastructure errors print one line and exit 1;
`--json` prints machine-readable output for every command. Each command imports what it
uses (`tests/cli/test_startup.py` pins it): `--help` loads no LangGraph, the inspections
no model client, server or MCP.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table

from graphwright.cli_inspect import delete, draw, history, show, threads, trace
from graphwright.cli_memory import memory_app
from graphwright.cli_output import JSON, console, emit_json, follow, friendly, orchestrator
from graphwright.cli_service import serve, worker
from graphwright.cli_storage import embedded_app, rekey_command, seal_command
from graphwright.cli_tools import tools_command
from graphwright_errors import UserError

if TYPE_CHECKING:
    from graphwright.nodes.gate_models import GateRequest

app = typer.Typer(
    rich_markup_mode="markdown",  # docstrings and help are Markdown, as the docs site reads them
    no_args_is_help=True,
    add_completion=False,
    help="graphwright: run, resume, inspect and draw agent graphs.",
)
app.add_typer(embedded_app, name="embedded")
app.add_typer(memory_app, name="memory")


@app.callback()
def project(
    config: Path | None = typer.Option(
        None,
        "--config",
        help="A langgraph.json whose graphs to serve and run; by default the "
        "one in the working directory, if any.",
    ),
) -> None:
    """graphwright: run, resume, inspect and draw agent graphs."""
    if config is not None:
        os.environ["GRAPHWRIGHT_CONFIG"] = str(config)  # read by Orchestrator.from_env


@app.command()
@friendly
def run(
    graph: str = typer.Argument(..., help="Registered graph name, e.g. agent."),
    goal: str | None = typer.Argument(None, help="What the run should do (a user message)."),
    input: str | None = typer.Option(
        None,
        "--input",
        "-i",
        help="The graph's own input as JSON, e.g. for a langgraph.json graph.",
    ),
    thread: str | None = typer.Option(None, "--thread", help="Thread id; a new one by default."),
    constraint: list[str] = typer.Option(
        [], "--constraint", "-c", help="A hard constraint; repeatable."
    ),
    replace: bool = typer.Option(False, "--replace", help="Delete THREAD first if it exists."),
    user: str | None = typer.Option(None, "--user", help="Recall and remember for this user id."),
    as_json: bool = JSON,
) -> None:
    """Run GRAPH on GOAL (or --input), streaming steps and the model's tokens.

    Stops at a gate with the command to answer it.
    """
    if (goal is None) == (input is None):
        raise UserError("give either GOAL or --input '<json>'")
    from graphwright.native import output_of
    from graphwright.serialize import jsonable

    orch = orchestrator()
    if replace and thread and thread in {t.thread_id for t in orch.threads()}:
        orch.delete(thread)
    given: str | dict[str, Any] = goal or ""
    if input is not None:
        given = _json_object(input, "--input")
    elif not orch.graphs.get(graph).native_input:
        given = {"goal": goal, "constraints": constraint}
    result = follow(
        orch.stream(graph, given, thread_id=thread, user_id=user, mode="messages"), as_json
    )
    if result.answer is None and result.status == "completed" and not as_json:
        emit_json(jsonable(output_of(orch.compiled(graph), orch.snapshot(result.thread_id).values)))


def _json_object(text: str, option: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(f"{option} is not valid JSON: {exc.msg} at position {exc.pos}") from exc
    if not isinstance(value, dict):
        raise UserError(f"{option} must be a JSON object")
    return value


@app.command()
@friendly
def resume(
    thread: str = typer.Argument(..., help="Thread id."),
    approve: bool = typer.Option(False, "--approve", help="Approve every pending call."),
    edit: str | None = typer.Option(
        None, "--edit", help="New arguments (JSON) for the pending call."
    ),
    reject: str | None = typer.Option(
        None, "--reject", help="Reject the pending calls with this reason."
    ),
    end: bool = typer.Option(
        False, "--end", help="With --reject: end the run instead of re-planning."
    ),
    retry: bool = typer.Option(
        False, "--retry", help="Run a write of unknown outcome again (same key)."
    ),
    mark_done: str | None = typer.Option(
        None, "--mark-done", help="A write of unknown outcome did happen, with this result."
    ),
    as_json: bool = JSON,
) -> None:
    """Answer the pending gate of THREAD, or continue a run whose process died."""
    chosen = [
        name
        for name, on in (
            ("approve", approve),
            ("edit", edit is not None),
            ("reject", reject is not None),
            ("retry", retry),
            ("mark_done", mark_done is not None),
        )
        if on
    ]
    if len(chosen) > 1:
        raise UserError("choose one of --approve, --edit, --reject, --retry and --mark-done")
    args = None
    if edit is not None:
        try:
            args = json.loads(edit)
        except json.JSONDecodeError as exc:
            raise UserError(f"--edit is not valid JSON: {exc.msg} at position {exc.pos}") from exc

    from graphwright.nodes.gate_models import decide_all

    def decide(pending: GateRequest) -> Any:  # called with the thread's lock held
        return decide_all(
            pending, chosen[0], args=args, reason=reject, end_run=end, result=mark_done
        )

    orch = orchestrator()
    follow(orch.stream_resume(thread, decide=decide if chosen else None, mode="messages"), as_json)


for command in (show, history, trace, threads, delete, draw):  # in graphwright.cli_inspect
    app.command()(friendly(command))


app.command()(friendly(serve))  # in graphwright.cli_service
app.command("rekey")(friendly(rekey_command))  # in graphwright.cli_storage
app.command("seal")(friendly(seal_command))
app.command()(friendly(worker))


@app.command("eval")
@friendly
def evaluate(
    suite: str = typer.Argument(
        ..., help="Suite file (YAML or JSON), or 'seed' for the shipped one."
    ),
    runs: int | None = typer.Option(
        None, "--runs", "-n", min=1, help="Runs per case (default: the suite's)."
    ),
    as_json: bool = JSON,
) -> None:
    """Run every case of SUITE N times: success rate, model and tool calls, tokens, time, stability.

    Exits 1 when a case failed in any run.
    """
    from graphwright.evals import load_suite, run_suite, summary_rows

    loaded = load_suite(suite)
    with console.status(f"running {len(loaded.cases)} cases…", spinner="dots"):
        report = run_suite(orchestrator(), loaded, runs)
    if as_json:
        emit_json(report.model_dump(mode="json"))
    else:
        rows = summary_rows(report)
        table = Table(title=f"suite {report.suite}: {report.runs_per_case} run(s) per case")
        for column in rows[0]:
            table.add_column(column, overflow="fold")
        for row in rows:
            table.add_row(*row.values())
        console.print(table)
        console.print(
            f"success {report.success_rate:.0%} · stability {report.stability:.0%} · model calls "
            f"mean {report.mean_model_calls:.2f} max {report.max_model_calls} · tool calls mean "
            f"{report.mean_tool_calls:.2f} · tokens mean {report.mean_tokens:.0f} · wall mean "
            f"{report.mean_wall_s * 1000:.0f} ms max {report.max_wall_s * 1000:.0f} ms",
            highlight=False,
        )
    if report.success_rate < 1:
        raise typer.Exit(1)


app.command("tools")(friendly(tools_command))
