"""The runs the API process executes itself, through the same run core as a worker.

Without `serve --queue`: its waits and streams, and through its own worker its background, delayed
and cron runs. On the process's run loop, where they run, at most `limit` at once.

Each is created leased on the delayed queue (`RunStore.create` with `lease_s`), and
the lease is renewed while it runs here: if this process dies, the lease runs out and a
worker takes the run over from its checkpoint. A run whose thread is busy retries with a
growing wait, as on a worker; one that fails here keeps its lease, which a worker inherits.
"""

from __future__ import annotations

import asyncio
import logging

from graphwright.orchestrator import Orchestrator
from graphwright.server.background.worker import Worker
from graphwright.server.records.run_steps import RunSteps
from graphwright.server.records.run_store import RunStore
from graphwright.server.runs.jobs import Jobs, backoff, kept
from graphwright.tools.runloop import run_loop

log = logging.getLogger(__name__)


class LocalRuns:
    """The API process's run core: on the run loop, at most `limit` runs at once."""

    def __init__(self, orch: Orchestrator, store: RunStore, *, limit: int = 10) -> None:
        self.store = store
        self.jobs = Jobs(orch, store, limit=limit)
        self.steps = RunSteps(store, orch.aclient)

    def submit(self, thread_id: str, run_id: str) -> None:
        """Begin executing the (leased) run; returns at once, from any thread."""
        asyncio.run_coroutine_threadsafe(self._spawn(thread_id, run_id), run_loop())

    def run_in_background(self, worker: Worker) -> None:
        """Run `worker` (background and delayed runs, the sweeper) on the run loop.

        It shares this process's `limit`: `serve` without `--queue` is a whole server.
        """
        worker.jobs = self.jobs
        asyncio.run_coroutine_threadsafe(worker.serve(), run_loop())

    async def _spawn(self, thread_id: str, run_id: str) -> None:
        lease_s = self.store.claim_window_s

        async def renew() -> bool:
            await self.steps.lease(thread_id, run_id, lease_s)
            return True

        # leased while it waits for a slot too: a run not started here soon goes to a worker
        beating = asyncio.create_task(kept(renew, lease_s / 3, f"the lease of run {run_id}"))
        try:
            await self.jobs.admitted()
        except BaseException:
            beating.cancel()
            raise
        self.jobs.spawn(run_id, self.execute(thread_id, run_id, beating))

    async def execute(self, thread_id: str, run_id: str, beating: asyncio.Task[None]) -> None:
        try:
            tries = 0
            while await self.jobs.attempt(self.jobs.executor(), thread_id, run_id) in (
                "busy",
                "wait",
            ):
                tries += 1
                await asyncio.sleep(backoff(tries))
        except Exception:  # nothing above to tell: the lease hands the run on to a worker
            log.exception("run %s on thread %s could not be executed here", run_id, thread_id)
            return
        finally:
            beating.cancel()
        await self.steps.release_lease(thread_id, run_id)
        await self.steps.wake_next(thread_id)
