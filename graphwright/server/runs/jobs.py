"""The run core of one process, shared by `graphwright worker` and the API process.

Runs execute concurrently on one event loop, each through its own executor (its own lock, fence and
owner), at most `limit` at once, each kept alive by its own renewal task.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable

from graphwright.orchestrator import Orchestrator
from graphwright.server.extras.process_metrics import Histogram
from graphwright.server.records.run_store import RunStore
from graphwright.server.runs.execution import Executor, Outcome

log = logging.getLogger(__name__)
RETRY_S = 0.2  # the first wait of a run whose thread is busy, doubled on each retry
RETRY_CAP_S = 2.0


def backoff(tries: int) -> float:
    """The wait before retry `tries` (1, 2, ...): exponential, capped, with jitter."""
    wait: float = min(RETRY_S * 2 ** max(tries - 1, 0), RETRY_CAP_S)
    return wait * random.uniform(0.8, 1.2)  # jitter, not a secret


async def kept(renew: Callable[[], Awaitable[bool]], every_s: float, what: str) -> None:
    """Renew a run's lease or queue entry every `every_s` until cancelled or no longer ours.

    A failed renewal is retried at the next beat (the lease outlives two misses).
    """
    while True:
        await asyncio.sleep(every_s)
        try:
            if not await renew():
                log.warning("%s is no longer ours; its renewal stops", what)
                return
        except Exception:  # Redis away for a beat: the next one tries again
            log.warning("%s could not be renewed; retrying", what, exc_info=True)


class Jobs:
    """Runs executing in this process, each an asyncio task, never more than `limit` at once.

    `serve`'s waits and streams and its own worker's runs share the one bound.
    """

    def __init__(self, orch: Orchestrator, store: RunStore, *, limit: int = 10) -> None:
        self.orch = orch
        self.store = store
        self.limit = limit
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.times = Histogram()  # how long the attempts that ended a run took (/metrics)
        self.reserved = 0  # slots a queue read in flight may fill
        self._changed: asyncio.Event | None = None

    def free(self) -> int:
        return self.limit - len(self.tasks) - self.reserved

    def changed(self) -> None:
        """A slot may have come free: wake whoever waits in `admitted`."""
        if self._changed is not None:
            self._changed.set()

    async def admitted(self) -> None:
        """Return once a slot is free.

        The caller spawns at once (no await in between), so two waiters woken together cannot both
        take the last slot.
        """
        while self.free() <= 0:
            if self._changed is None:
                self._changed = asyncio.Event()
            self._changed.clear()
            await self._changed.wait()

    def executor(self) -> Executor:
        """A fresh executor per attempt: its owner id tells this attempt's writes apart."""
        return Executor(self.orch, self.store)

    def spawn(self, key: str, job: Awaitable[None]) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(job)
        self.tasks[key] = task

        def ended(_: asyncio.Task[None]) -> None:
            self.tasks.pop(key, None)
            self.changed()

        task.add_done_callback(ended)

    async def attempt(self, executor: Executor, thread_id: str, run_id: str) -> Outcome:
        began = time.monotonic()
        outcome = await executor.arun(thread_id, run_id)
        if outcome == "done":
            self.times.observe((time.monotonic() - began) * 1000)
        return outcome

    async def settled(self, timeout_s: float) -> set[str]:
        """Wait up to `timeout_s` for every run to end; the keys of those still going."""
        if self.tasks:
            await asyncio.wait(list(self.tasks.values()), timeout=timeout_s)
        return set(self.tasks)
