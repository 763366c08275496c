"""The CLI's read-only commands: show, history, trace, threads, draw (and delete)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table

from graphwright.cli_output import (
    JSON,
    console,
    emit_json,
    orchestrator,
    reader,
    show_gate,
    utc_time,
)
from graphwright.drawing import FORMATS

if TYPE_CHECKING:
    from graphwright.results import ThreadSummary


def show(thread: str, as_json: bool = JSON) -> None:
    """Status, answer, next step and pending gate of THREAD."""
    if as_json:
        emit_json(orchestrator().state(thread).model_dump(mode="json"))
        return
    shown = _summary(thread)
    console.print(f"thread {thread} · graph {shown.graph} · status {shown.status}", highlight=False)
    console.print(
        f"next: {', '.join(shown.next) or '-'} · stop reason: {shown.stop_reason or '-'}",
        highlight=False,
    )
    if shown.answer:
        console.print(shown.answer, highlight=False)
    if shown.pending:
        show_gate(thread, shown.pending)


def _summary(thread: str) -> ThreadSummary:
    """The summary the thread's last run recorded, read without LangGraph; else the graph's."""
    light = reader()
    return (light and light.summary(thread)) or orchestrator().summary(thread)


def history(thread: str, as_json: bool = JSON) -> None:
    """Checkpoints of THREAD, newest first."""
    items = orchestrator().history(thread)
    if as_json:
        emit_json([i.model_dump(mode="json") for i in items])
        return
    table = Table(title=f"checkpoints of {thread}")
    for column in ("step", "after", "next", "checkpoint", "created"):
        table.add_column(column)
    for i in items:
        table.add_row(
            str(i.step),
            ", ".join(i.node) or i.source or "",
            ", ".join(i.next),
            i.checkpoint_id,
            i.created_at or "",
        )
    console.print(table)


def trace(thread: str, as_json: bool = JSON) -> None:
    """The recorded events of THREAD (secrets redacted)."""
    light = reader()  # no graph: the Orchestrator only with a langgraph.json
    events = light.trace(thread) if light else orchestrator().trace(thread)
    if as_json:
        emit_json(events)
        return
    table = Table(title=f"trace of {thread}")
    for column in ("kind", "step", "what", "outcome"):
        table.add_column(column)
    for e in events:
        table.add_row(e["kind"], str(e.get("step", "")), _what(e), _outcome(e))
    console.print(table)


def _what(e: dict[str, Any]) -> str:
    if e["kind"] == "tool_call":
        return f"{e['tool']} {json.dumps(e.get('args'), ensure_ascii=False)}"
    if e["kind"] == "model_call":
        calls = ", ".join(c["name"] for c in e.get("tool_calls") or []) or "answer"
        return f"{e.get('model')} → {calls}"
    if e["kind"] == "run_start":
        return f"{e.get('graph')} {'(resumed)' if e.get('resumed') else ''}"
    return str(e.get("stop_reason") or e.get("decisions") or "")


def _outcome(e: dict[str, Any]) -> str:
    if e["kind"] == "tool_call":
        return "ok" if e.get("ok") else str((e.get("error") or {}).get("message", ""))
    if e["kind"] == "model_call":
        return f"{e.get('input_tokens')}+{e.get('output_tokens')} tokens"
    return str(e.get("answer") or "")


def threads(as_json: bool = JSON) -> None:
    """Known threads, newest first."""
    items = orchestrator().threads()
    if as_json:
        emit_json([i.model_dump(mode="json") for i in items])
        return
    table = Table(title="threads")
    for column in ("thread", "graph", "status", "updated"):
        table.add_column(column)
    for i in items:
        table.add_row(i.thread_id, i.graph or "", i.status or "", utc_time(i.updated_at))
    console.print(table)


def delete(thread: str, as_json: bool = JSON) -> None:
    """Delete THREAD: checkpoints, trace and records."""
    orchestrator().delete(thread)
    emit_json({"deleted": thread}) if as_json else console.print(f"deleted {thread}")


def draw(
    graph: str = typer.Argument(..., help="Registered graph name."),
    thread: str | None = typer.Option(None, "--thread", help="Mark the path this thread took."),
    format: str = typer.Option("mermaid", "--format", "-f", help=f"One of {', '.join(FORMATS)}."),
    output: Path | None = typer.Option(
        None, "-o", "--output", help="Write to FILE instead of stdout."
    ),
    as_json: bool = JSON,
) -> None:
    """Draw GRAPH offline (Mermaid, ASCII, SVG or HTML), optionally with a thread's path."""
    text = orchestrator().draw(graph, format, thread)  # type: ignore[arg-type]
    if output is not None:
        output.write_text(text, encoding="utf-8")
    if as_json:
        emit_json(
            {
                "graph": graph,
                "format": format,
                "thread": thread,
                "output": str(output) if output else None,
                **({} if output else {"text": text}),
            }
        )
    elif output is not None:
        console.print(f"wrote {output}", highlight=False)
    else:
        sys.stdout.write(text)
