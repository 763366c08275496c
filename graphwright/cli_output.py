"""What the CLI prints: one-line errors, step lines, results, gates and JSON output.

Light to import (no LangGraph, no model client): every CLI command, `--help` included,
loads it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from functools import wraps
from typing import TYPE_CHECKING, Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from graphwright.checkpoints.errors import RedisUnavailableError
from graphwright.live import LiveText
from graphwright_errors import GraphwrightError, UserError

if TYPE_CHECKING:
    from graphwright.nodes.gate_models import GateRequest
    from graphwright.orchestrator import Orchestrator
    from graphwright.reader import ThreadReader
    from graphwright.results import RunResult, StepEvent

console = Console()
errors = Console(stderr=True, soft_wrap=True)  # one line, never wrapped

F = TypeVar("F", bound=Callable[..., Any])
JSON = typer.Option(False, "--json", help="Machine-readable output.")


def utc_time(epoch_s: float | None) -> str:
    """A Unix time as a UTC date and time to the second, for a person to read.

    UTC, named, so that times read on a server, a container and a laptop compare as they are;
    `--json` keeps the number for programs.
    """
    if not epoch_s:
        return "-"
    from datetime import UTC, datetime

    return datetime.fromtimestamp(epoch_s, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def orchestrator() -> Orchestrator:
    """`Orchestrator.from_env()`, imported here.

    Only commands that need it pay for it (LangGraph and the graphs), never `--help`.
    """
    from graphwright.orchestrator import Orchestrator

    return Orchestrator.from_env()


def reader() -> ThreadReader | None:
    """`ThreadReader.from_env()`, imported here like `orchestrator`.

    The reads that need no graph pay for Redis and the settings, never for LangGraph.
    """
    from graphwright.reader import ThreadReader

    return ThreadReader.from_env()


def friendly(func: F) -> F:
    """One clear line instead of a traceback: exit 2 for the user's mistakes, 1 otherwise."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except UserError as exc:
            errors.print(f"[red]error:[/red] {exc}", highlight=False)
            raise typer.Exit(2) from None
        except RedisUnavailableError as exc:  # the user's own settings can fix this
            from graphwright.saver import UNREACHABLE_HINT  # loaded by whoever raised

            errors.print(f"[red]error:[/red] {exc}. {UNREACHABLE_HINT}", highlight=False)
            raise typer.Exit(1) from None
        except GraphwrightError as exc:
            errors.print(f"[red]error:[/red] {exc}", highlight=False)
            raise typer.Exit(1) from None

    return wrapper  # type: ignore[return-value]  # same signature as func


def emit_json(data: Any) -> None:
    """Print `data` as JSON for programs (`--json`): UTF-8 as is, anything else by `str`."""
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")


def describe_step(event: StepEvent) -> str | None:
    """One line per step: what the node decided or did."""
    update = event.update
    if event.node == "plan":
        calls = [c for m in update.get("messages", []) for c in m.get("tool_calls", [])]
        if calls:
            return "plan → " + ", ".join(
                f"{c['name']}({json.dumps(c['args'], ensure_ascii=False)})" for c in calls
            )
        return "plan → answer" if update.get("stop_reason") else "plan"
    if event.node == "act":
        outcomes = [
            f"{m.get('name')} {'ok' if m.get('status') != 'error' else 'failed'}"
            for m in update.get("messages", [])
        ]
        return "act → " + ", ".join(outcomes)
    if event.node == "observe" and update.get("stop_reason"):
        return f"observe → stop: {update['stop_reason']}"
    if event.node in ("compact", "human_gate"):
        return event.node
    return None


def is_model_error(result: RunResult) -> bool:
    """Whether a run failed on the model provider, which a retry may fix."""
    return (result.error or "").startswith("the model call failed")


def show_result(result: RunResult, answer_shown: bool = False) -> None:
    """Print how a run ended: its gate, its error or its answer (unless streamed already)."""
    if result.status == "interrupted" and result.pending:
        show_gate(result.thread_id, result.pending)
    elif result.status == "failed":
        console.print(f"[red]failed[/red]: {result.error}", highlight=False)
        console.print(
            f"continue it from its last checkpoint: graphwright resume {result.thread_id}"
            + (" (or give the thread its next turn)" if is_model_error(result) else ""),
            highlight=False,
        )
    else:
        colour = "green" if result.status == "completed" else "yellow"
        # A plain LangGraph graph ends with no stop reason: nothing in brackets then.
        why = f" ({result.stop_reason})" if result.stop_reason else ""
        console.print(
            f"[{colour}]{result.status}[/{colour}]{why} thread {result.thread_id}",
            highlight=False,
        )
        if not answer_shown:
            console.print(result.answer or "", highlight=False)
    u = result.usage
    tokens = f"~{u.tokens} (estimated)" if u.tokens_estimated else str(u.tokens)
    console.print(
        f"[dim]model calls {u.model_calls} · tool calls {u.tool_calls} · "
        f"tokens {tokens} · steps {result.steps}[/dim]"
    )


def show_gate(thread_id: str, pending: GateRequest) -> None:
    """Print the pending calls as a table, with the commands that answer them."""
    table = Table(title=f"thread {thread_id} is waiting for approval", show_lines=True)
    table.add_column("call id", overflow="fold")
    for column in ("tool", "arguments", "risk", "why"):
        table.add_column(column)
    for c in pending.calls:
        why = (
            c.reason
            if c.kind == "approval"
            else f"OUTCOME UNKNOWN (key {c.idempotency_key}): {c.reason}"
        )
        tool = f"{c.tool}\n(MCP server {c.server})" if c.server else c.tool
        table.add_row(c.id, tool, json.dumps(c.args, ensure_ascii=False, indent=1), c.risk, why)
    console.print(table)
    if any(c.kind == "outcome_unknown" for c in pending.calls):
        console.print("a write's outcome is unknown; check it, then answer with one of:")
        console.print(f"  graphwright resume {thread_id} --retry", highlight=False)
        console.print(
            f"  graphwright resume {thread_id} --mark-done '<what it did>'", highlight=False
        )
        console.print(f"  graphwright resume {thread_id} --reject '<reason>'", highlight=False)
        return
    console.print("answer it with one of:")
    console.print(f"  graphwright resume {thread_id} --approve", highlight=False)
    console.print(
        f"  graphwright resume {thread_id} --edit '<new arguments as JSON>'", highlight=False
    )
    console.print(f"  graphwright resume {thread_id} --reject '<reason>'", highlight=False)


def follow(events: Iterator[StepEvent], as_json: bool) -> RunResult:
    """Print steps (and model tokens, when streamed) as they happen, a spinner while waiting."""
    result: RunResult | None = None
    with console.status("running…", spinner="dots") as status:
        live = LiveText(console, status)
        for event in events:
            if event.kind == "token":
                if not as_json:
                    live.token(event)
                continue
            live.end()
            if event.result is not None:
                result = event.result
                continue
            line = describe_step(event)
            if line and not as_json:
                console.print(f"• {line}", highlight=False)
            status.update(
                "plan: calling the model…"
                if event.node in ("observe", "human_gate", "compact")
                else "running…"
            )
    if result is None:  # the orchestrator always ends a stream with its result
        raise GraphwrightError("the run ended without a result")
    if as_json:
        emit_json(result.model_dump(mode="json"))
    else:
        show_result(result, answer_shown=live.shown(result.answer))
    if result.status == "failed":
        raise typer.Exit(1)
    return result
