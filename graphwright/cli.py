"""The `graphwright` command line (Typer + Rich), a thin layer over `Orchestrator`.

User errors print one line and exit 2; infrastructure errors print one line and exit 1;
`--json` prints machine-readable output for every command. Each command imports what it
uses (`tests/cli/test_startup.py` pins it): `--help` loads no LangGraph, the inspections
no model client, server or MCP.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table

from graphwright.cli_inspect import delete, draw, history, show, threads, trace
from graphwright.cli_output import JSON, console, emit_json, follow, friendly, orchestrator
from graphwright.cli_tools import tools_command
from graphwright_errors import ConfigurationError, NotFoundError, UserError

if TYPE_CHECKING:
    from graphwright.nodes.gate_models import GateRequest

app = typer.Typer(
    rich_markup_mode="markdown",  # docstrings and help are Markdown, as the docs site reads them
    no_args_is_help=True,
    add_completion=False,
    help="graphwright: run, resume, inspect and draw agent graphs.",
)
embedded_app = typer.Typer(
    rich_markup_mode="markdown", help="The embedded Redis that holds state when REDIS_URL is unset."
)
app.add_typer(embedded_app, name="embedded")
memory_app = typer.Typer(
    rich_markup_mode="markdown", help="Long-term memory: what users asked to be remembered."
)
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


@app.command()
@friendly
def serve(
    host: str = typer.Option("127.0.0.1", help="Interface to listen on."),
    port: int = typer.Option(8123, help="Port to listen on."),
    queue: bool = typer.Option(
        False,
        "--queue",
        help="Hand every run (waits and streams too) and "
        "the crons to `graphwright worker` processes: the API runs no graph.",
    ),
    jobs: int = typer.Option(
        10,
        "--jobs",
        min=1,
        help="Runs executed here at once (without "
        "--queue): waits, streams, background, delayed and cron runs.",
    ),
) -> None:
    """Serve the LangGraph-compatible HTTP API and the /review pages.

    Alone it is a whole server, as `langgraph dev` is: it runs background, delayed and cron
    runs itself. With --queue it runs none and `graphwright worker` processes do.
    """
    import uvicorn

    from graphwright.server.app import create_app
    from graphwright.startup import when_reachable

    # Runs' metadata and checkpoints name the API's address, as under `langgraph dev`
    # (a deployment behind a proxy sets LANGGRAPH_API_URL, and so do its workers).
    os.environ.setdefault("LANGGRAPH_API_URL", f"http://{host}:{port}")
    if host == "localhost" or host.startswith(("127.", "::1")):  # as `langgraph dev`: a
        os.environ.setdefault("ALLOW_PRIVATE_NETWORK", "true")  # hosted page may call it

    def opened() -> Any:
        orch = orchestrator()
        key = orch.settings.api_key.get_secret_value() if orch.settings.api_key else None
        return create_app(
            orch,
            api_key=key,
            queue_waits=queue,
            jobs=jobs,  # its start-up reads Redis
            whole=True,
        )

    uvicorn.run(when_reachable(opened), host=host, port=port, log_level="warning")


@app.command("rekey")
@friendly
def rekey_command(as_json: bool = JSON) -> None:
    """Re-encrypt what is stored with the newest key of GRAPHWRIGHT_ENCRYPTION_KEYS."""
    _reseal(seal_plain=False, as_json=as_json)


@app.command("seal")
@friendly
def seal_command(as_json: bool = JSON) -> None:
    """Seal what was stored before encryption was on, then re-encrypt as rekey does."""
    _reseal(seal_plain=True, as_json=as_json)


def _reseal(*, seal_plain: bool, as_json: bool) -> None:
    from graphwright.checkpoints.rekey import rekey
    from graphwright.tools.builtin import fill_calendar_slots

    orch = orchestrator()
    if not orch.sealer.on:
        raise ConfigurationError("encryption is off; set GRAPHWRIGHT_ENCRYPT=1 and the keys first")
    places = orch.keys.sealed_places() if seal_plain else ()
    if seal_plain:  # before the calendar's plain events are sealed, its overlap check needs them
        fill_calendar_slots(orch.client, orch.keys)
    report = rekey(orch.client, orch.sealer, orch.settings.key_prefix, places)
    # the thread index's keyed hashes follow the newest key too, so the old key can go
    threads = orch.index.reindex(lambda t: json.loads(orch.meta(t).get("metadata") or "{}"))
    if as_json:
        emit_json(
            {
                "keys_seen": report.keys_seen,
                "values_resealed": report.values_resealed,
                "values_sealed": report.values_sealed,
                "threads_reindexed": threads,
            }
        )
    else:
        console.print(
            f"sealed {report.values_sealed} plain values, re-sealed "
            f"{report.values_resealed} values in {report.keys_seen} keys; "
            f"re-indexed {threads} threads"
        )


@app.command()
@friendly
def worker(
    name: str | None = typer.Option(None, help="Consumer name; host and pid by default."),
    jobs: int = typer.Option(10, "--jobs", min=1, help="Runs executed at once, on one event loop."),
    grace: float = typer.Option(
        30.0,
        "--grace",
        min=0,
        help="Seconds a stopping worker gives its runs "
        "to finish before it hands the rest back to the queue.",
    ),
) -> None:
    """Take background runs from the Redis queue until stopped (SIGTERM or Ctrl-C)."""
    import signal

    from graphwright.server.auth.authority import Authority, configured_auth
    from graphwright.server.background.cron_runs import scheduler_for
    from graphwright.server.background.worker import Worker
    from graphwright.startup import when_reachable

    orch = when_reachable(orchestrator, forever=True)
    consumer = Worker(
        orch, name=name, claim_idle_ms=orch.settings.claim_idle_ms, jobs=jobs, grace_s=grace
    )
    auth = configured_auth(orch.settings.auth, orch.project.auth_path() if orch.project else None)
    authority = Authority(auth=auth) if auth is not None else None
    # every worker schedules crons (each due run is claimed once), authorized as their creators
    scheduler_for(orch, authority).start()
    signal.signal(signal.SIGTERM, lambda *_: consumer.stop.set())
    signal.signal(signal.SIGINT, lambda *_: consumer.stop.set())
    console.print(
        f"worker {consumer.name} reading {consumer.queue} with {jobs} jobs", highlight=False
    )
    consumer.run_forever()
    if consumer.handed_back:  # their executor threads are abandoned: do not wait for them
        console.print(f"handed back {len(consumer.handed_back)} unfinished runs", highlight=False)
        sys.stdout.flush()
        os._exit(0)


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


app.command("tools")(friendly(tools_command))


@embedded_app.command("stop")
@friendly
def embedded_stop() -> None:
    """Shut the embedded Redis down cleanly (its data stays on disk)."""
    from graphwright.checkpoints.embedded import EmbeddedRedis
    from graphwright.settings import Settings

    EmbeddedRedis(Settings().home).stop()
    console.print("embedded Redis stopped")
