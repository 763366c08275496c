"""What `serve` runs beside its routes.

Without `--queue` its own worker (background and delayed runs, the sweeper) and cron scheduler, as
`langgraph dev` does; with `--queue` a look for a live `graphwright worker`, said in the log when
there is none.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from graphwright.orchestrator import Orchestrator
from graphwright.server.auth.authority import Authority
from graphwright.server.background.cron_runs import scheduler_for
from graphwright.server.background.local_runs import LocalRuns
from graphwright.server.background.worker import Worker, live_workers

log = logging.getLogger(__name__)
NO_WORKER = (
    "serve --queue: no graphwright worker is running on this queue (%s); background "
    "runs, waits, streams and crons wait until one starts: run `graphwright worker`"
)

Lifespan = Callable[[Any], AbstractAsyncContextManager[None]]


def lifespan(
    orch: Orchestrator,
    local: LocalRuns,
    authority: Authority | None,
    *,
    queue: bool,
    run_here: bool,
) -> Lifespan:
    """The app's lifespan: start the background work on start-up, stop it on shutdown."""

    @asynccontextmanager
    async def span(_: Any) -> AsyncIterator[None]:
        if queue and not await asyncio.to_thread(live_workers, orch):
            log.warning(NO_WORKER, orch.keys.queue())
        if not run_here:
            yield
            return
        worker = Worker(
            orch,
            name=f"serve-{socket.gethostname()}-{os.getpid()}",
            claim_idle_ms=orch.settings.claim_idle_ms,
            jobs=local.jobs.limit,
        )
        scheduler = scheduler_for(orch, authority)
        local.run_in_background(worker)
        scheduler.start()
        try:
            yield
        finally:
            worker.stop.set()
            scheduler.stop.set()

    return span
