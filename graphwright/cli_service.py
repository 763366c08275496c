"""The CLI's service commands: `serve` (the HTTP API) and `worker` (the queue's runs)."""

from __future__ import annotations

import os
import sys
from typing import Any

import typer

from graphwright.cli_output import console, orchestrator


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


def worker(
    name: str | None = typer.Option(None, help="Consumer name; host and pid by default."),
    jobs: int | None = typer.Option(
        None, "--jobs", min=1, help="Runs executed at once, on one event loop [default: 32]."
    ),
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
    from graphwright.settings import WORKER_JOBS
    from graphwright.startup import when_reachable

    orch = when_reachable(orchestrator, forever=True)
    jobs = jobs or WORKER_JOBS
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
