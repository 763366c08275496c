"""The runs the API process executes itself, through the same run core as a worker.

Without `serve --queue`: its waits and streams, and through its own worker its background, delayed
and cron runs. On an event loop of their own, at most `limit` at once.

Each is created leased on the delayed queue (`RunStore.create` with `lease_s`), and
the lease is renewed while it runs here: if this process dies, the lease runs out and a
worker takes the run over from its checkpoint. A run whose thread is busy retries with a
growing wait, as on a worker; one that fails here keeps its lease, which a worker inherits.
"""

from __future__ import annotations

import asyncio
import logging
import threading

from graphwright.orchestrator import Orchestrator
from graphwright.server.background.worker import Worker
from graphwright.server.records.run_store import RunStore
from graphwright.server.runs.jobs import Jobs, backoff, kept

log = logging.getLogger(__name__)


class LocalRuns:
    """The API process's run core: one loop thread, at most `limit` runs at once."""

    def __init__(self, orch: Orchestrator, store: RunStore, *, limit: int = 10) -> None:
        self.store = store
        self.jobs = Jobs(orch, store, limit=limit)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._starting = threading.Lock()

    def submit(self, thread_id: str, run_id: str) -> None:
        """Begin executing the (leased) run; returns at once, from any thread."""
        asyncio.run_coroutine_threadsafe(self._spawn(thread_id, run_id), self._started())

    def _started(self) -> asyncio.AbstractEventLoop:
        with self._starting:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, daemon=True, name="gw-local-runs").start()
                self._loop = loop
            return self._loop

    def run_in_background(self, worker: Worker) -> None:
        """Run `worker` (background and delayed runs, the sweeper) on this loop.

        It shares this process's `limit`: `serve` without `--queue` is a whole server.
        """
        worker.jobs = self.jobs
        asyncio.run_coroutine_threadsafe(worker.serve(), self._started())

    async def _spawn(self, thread_id: str, run_id: str) -> None:
        lease_s = self.store.claim_window_s

        async def renew() -> bool:
            await asyncio.to_thread(self.store.lease, thread_id, run_id, lease_s, renew=True)
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
        await asyncio.to_thread(self.store.release_lease, thread_id, run_id)
        await asyncio.to_thread(self.store.wake_next, thread_id)
