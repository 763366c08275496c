"""The ``graphwright`` command line (Typer + Rich)."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

import typer
from langchain_core.runnables import RunnableConfig
from rich.console import Console

from checkpoints.embedded import EmbeddedRedis
from checkpoints.errors import GraphwrightError
from graphs.demo import build_demo_graph
from graphwright.settings import Settings
from graphwright.store import open_saver

app = typer.Typer(no_args_is_help=True, add_completion=False, help="graphwright orchestrator")
embedded_app = typer.Typer(help="The embedded Redis that holds state when REDIS_URL is unset.")
app.add_typer(embedded_app, name="embedded")
console = Console()


def _fail(exc: GraphwrightError) -> None:
    console.print(f"[red]error:[/red] {exc}")
    raise typer.Exit(1)


@app.command()
def demo(
    thread: str = typer.Option(None, help="Thread id; a new one by default."),
    resume: bool = typer.Option(False, help="Only resume THREAD (used by the second process)."),
) -> None:
    """Checkpoint a run, stop it before its last step, resume it in a second process."""
    try:
        saver = open_saver(Settings())
        graph = build_demo_graph(saver)
        if resume:
            resume_config: RunnableConfig = {"configurable": {"thread_id": thread}}
            result = graph.invoke(None, resume_config)
            console.print(json.dumps(result))
            return
        thread = thread or f"demo-{uuid.uuid4().hex[:8]}"
        config: RunnableConfig = {"configurable": {"thread_id": thread}}
        graph.invoke({"log": [], "pid": []}, config)
        state = graph.get_state(config)
        console.print(
            f"thread [bold]{thread}[/bold] stopped before {list(state.next)}; "
            f"checkpoints so far: {len(list(graph.get_state_history(config)))}"
        )
    except GraphwrightError as exc:
        _fail(exc)
    second = subprocess.run(
        [sys.executable, "-m", "graphwright", "demo", "--resume", "--thread", thread],
        capture_output=True,
        text=True,
        check=False,
    )
    if second.returncode != 0:
        console.print(second.stdout + second.stderr)
        raise typer.Exit(1)
    final = json.loads(second.stdout)
    console.print(f"resumed in a second process: {final['log']}")
    console.print(f"processes that ran the steps: {final['pid']}")


@embedded_app.command("stop")
def embedded_stop() -> None:
    """Shut the embedded Redis down cleanly (its data stays on disk)."""
    EmbeddedRedis(Settings().home).stop()
    console.print("embedded Redis stopped")
