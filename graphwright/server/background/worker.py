"""`graphwright worker`.

Take background runs from a Redis Streams consumer group, up to `jobs` at once on one event loop.

A worker that dies leaves its entries pending; another claims each once it has been idle
for `claim_idle_ms` and finishes the run from its checkpoint. A live worker keeps each
entry fresh with its own heartbeat, which only ever refreshes an entry it still owns. A run
whose thread is busy, or that is not yet first in its thread's line, goes back to the
delayed queue with a growing wait: a retry, never an error. Stopping, the worker takes no
more work and finishes or hands back every run within `grace_s`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
import time
from typing import Any

import redis
from redis.exceptions import RedisClusterException

from graphwright.aconnect import AsyncScript, batch
from graphwright.orchestrator import Orchestrator
from graphwright.server.aio import AsyncClient, async_client
from graphwright.server.background._sweeper import sweep
from graphwright.server.records.run_scripts import HEARTBEAT, RELEASE_DUE, TRIM
from graphwright.server.records.run_steps import RunSteps
from graphwright.server.records.run_store import GROUP, RunStore, member
from graphwright.server.runs.execution import Executor, Outcome
from graphwright.server.runs.jobs import Jobs, backoff, kept
from graphwright.server.runs.webhook_sender import SENDER
from graphwright.settings import WORKER_JOBS
from graphwright.tools.runloop import call, hand
from graphwright_errors import GraphwrightError, InfrastructureError, NotFoundError

log = logging.getLogger(__name__)
TRIM_EVERY_S = 1.0
_RELEASE_DUE, _TRIM = AsyncScript(RELEASE_DUE), AsyncScript(TRIM)
MAX_TRIES_KEPT = 10_000  # retry counts remembered for backoff; forgotten past that
LIVE_S = 10.0  # a worker seen this recently is taking work (it looks in every block_ms)
FORGOTTEN_S = 3600.0


def live_workers(orch: Orchestrator) -> int:
    """How many workers (`graphwright worker`, or `serve`'s own) took work lately."""
    return int(orch.client.zcount(orch.keys.workers(), time.time() - LIVE_S, "+inf"))


class Worker:
    """One consumer of the run queue, running up to `jobs` runs concurrently."""

    def __init__(
        self,
        orch: Orchestrator,
        *,
        name: str | None = None,
        claim_idle_ms: int = 60_000,
        block_ms: int = 1_000,
        jobs: int = WORKER_JOBS,
        grace_s: float = 30.0,
    ) -> None:
        self.orch = orch
        self.store = RunStore.of(orch)
        self.queue = orch.keys.queue()
        self.name = name or f"{socket.gethostname()}-{os.getpid()}"
        self.claim_idle_ms = claim_idle_ms
        self.block_ms = block_ms
        self.grace_s = grace_s
        self.jobs = Jobs(orch, self.store, limit=jobs)
        self.steps = RunSteps(self.store, orch.aclient)  # on the run loop, where serve runs
        self.stop = threading.Event()
        self.handed_back: list[str] = []  # runs given back unfinished when the worker stopped
        self.tries: dict[str, int] = {}
        self._executors: dict[str, tuple[Executor, str, str]] = {}  # by queue entry
        self._swept = self._trimmed = 0.0
        self._sweeping: asyncio.Task[None] | None = None

    def ensure_group(self) -> None:
        try:
            self.orch.client.xgroup_create(self.queue, GROUP, id="0", mkstream=True)
        except redis.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):  # the group exists already: fine
                raise

    def run_forever(self) -> None:
        """Serve until `stop` is set, then drain; on the process's run loop, where its runs run.

        Reading the queue and running what it reads on one loop: a run is awaited, not handed
        from one loop's thread to another's.
        """
        call(self.serve(), "Worker.run_forever")

    async def serve(self) -> None:
        client = async_client(self.orch.settings)
        heartbeat = client.register_script(HEARTBEAT)
        ready = False
        try:
            while not self.stop.is_set():  # an outage of any length is waited out, never an exit
                try:
                    if not ready:
                        await asyncio.to_thread(self.ensure_group)
                        ready = True
                    await self.step(client, heartbeat)
                except (redis.RedisError, RedisClusterException, InfrastructureError) as exc:
                    # Any Redis error, not only a lost connection (out of memory, read-only
                    # after a failover, still loading, a cluster between two slot maps):
                    # waited out, and the loop goes on.
                    log.warning(
                        "worker %s: Redis refused or is not reachable (%s: %s); waiting for it",
                        self.name,
                        type(exc).__name__,
                        exc,
                    )
                    await asyncio.to_thread(self.stop.wait, 1.0)
            await self.drain()
        finally:
            if self._sweeping is not None:  # its thread finishes its pass; nothing waits on it
                self._sweeping.cancel()
            await client.aclose()

    async def step(self, client: AsyncClient, heartbeat: Any) -> int:
        """Housekeeping, then claim abandoned entries or read new ones: the number of runs started.

        A sweep due goes on beside, in a task of its own. As many entries as there are free jobs are
        taken; each becomes a task.
        """
        await self.ahousekeeping(client)
        if self._sweep_due():
            self._sweeping = asyncio.create_task(self.sweep())
        free = self.jobs.free()
        if free <= 0:  # all jobs busy: wait for one to end (or a while, to look at `stop`)
            await asyncio.wait(
                list(self.jobs.tasks.values()),
                timeout=self.block_ms / 1000,
                return_when=asyncio.FIRST_COMPLETED,
            )
            return 0
        self.jobs.reserved += free  # the slots the entries read below may fill
        try:
            entries = await self._take(client, free)
            for entry_id, fields in entries:
                if not fields:  # trimmed away (never by us while pending): nothing left to run
                    await client.xack(self.queue, GROUP, entry_id)
                    continue
                thread, run_id = fields[b"thread_id"].decode(), fields[b"run_id"].decode()
                self.jobs.spawn(
                    entry_id.decode(), self.process(client, heartbeat, entry_id, thread, run_id)
                )
        finally:
            self.jobs.reserved -= free
            self.jobs.changed()
        return len(entries)

    async def _take(self, client: AsyncClient, free: int) -> list[Any]:
        """Abandoned entries, else new ones at once, else one new one waited for.

        A blocking read holds one slot only, so runs of the API process sharing `jobs` are not kept
        waiting by a read that finds nothing.
        """
        claimed: Any = await client.xautoclaim(
            self.queue, GROUP, self.name, self.claim_idle_ms, start_id="0-0", count=free
        )
        entries: list[Any] = list(claimed[1]) if claimed else []
        if entries:
            return entries
        read: Any = await client.xreadgroup(GROUP, self.name, {self.queue: ">"}, count=free)
        if not read or not read[0][1]:
            self.jobs.reserved -= free - 1
            try:
                read = await client.xreadgroup(
                    GROUP, self.name, {self.queue: ">"}, count=1, block=self.block_ms
                )
            finally:
                self.jobs.reserved += free - 1
        return list(read[0][1]) if read else []

    async def ahousekeeping(self, client: AsyncClient) -> None:
        """`housekeeping` by coroutines on the worker's client: one round trip on a single server.

        A cluster's delayed runs move one by one across slots: there it goes to a thread.
        """
        if self.store.cluster:
            await asyncio.to_thread(self.housekeeping)
            return
        now, workers = time.time(), self.orch.keys.workers()
        commands = [
            _RELEASE_DUE.command([self.store.delayed(), self.queue], [now]),
            ("ZADD", workers, now, self.name),
            ("ZREMRANGEBYSCORE", workers, "-inf", now - FORGOTTEN_S),
        ]
        if time.monotonic() - self._trimmed >= TRIM_EVERY_S:
            self._trimmed = time.monotonic()
            commands.append(_TRIM.command([self.queue], [GROUP]))
        await batch(client, commands)

    def housekeeping(self) -> None:
        """Due delayed runs onto the queue.

        Now and then trim what acknowledged entries are left (from before entries were deleted with
        their acknowledgement).
        """
        self.store.release_due()
        self.seen()
        now = time.monotonic()
        if now - self._trimmed >= TRIM_EVERY_S:
            self._trimmed = now
            self.store.trim_queue()

    def _sweep_due(self) -> bool:
        """Whether to start a sweep now: once per half claim window, one at a time."""
        if self._sweeping is not None and not self._sweeping.done():
            return False
        now = time.monotonic()
        if now - self._swept < self.store.claim_window_s / 2:
            return False
        self._swept = now
        return True

    async def sweep(self) -> None:
        """Requeue the runs nobody holds (`sweeper.sweep`).

        It reads every thread, which takes a while when there are many: it never holds up the
        worker's taking of runs.
        """
        try:
            await asyncio.to_thread(sweep, self.store)
        except (redis.RedisError, InfrastructureError) as exc:  # the next sweep tries again
            log.warning("worker %s: the sweep failed (%s: %s)", self.name, type(exc).__name__, exc)

    def seen(self) -> None:
        """Mark this worker live (`live_workers`), forgetting workers gone for an hour."""
        now = time.time()
        with self.orch.client.pipeline(transaction=False) as pipe:
            pipe.zadd(self.orch.keys.workers(), {self.name: now})
            pipe.zremrangebyscore(self.orch.keys.workers(), "-inf", now - FORGOTTEN_S)
            pipe.execute()

    async def process(
        self, client: AsyncClient, heartbeat: Any, entry_id: bytes, thread: str, run_id: str
    ) -> None:
        executor = self.jobs.executor()
        self._executors[entry_id.decode()] = (executor, thread, run_id)

        async def beat() -> bool:
            return bool(await heartbeat(keys=[self.queue], args=[GROUP, entry_id, self.name]))

        beating = asyncio.create_task(
            kept(beat, self.claim_idle_ms / 3000, f"run entry {entry_id!r}")
        )
        outcome: Outcome | None = None
        try:
            outcome = await self.jobs.attempt(executor, thread, run_id)
        except NotFoundError:
            log.warning("run %s on thread %s no longer exists; dropping it", run_id, thread)
            outcome = "gone"
        except (GraphwrightError, redis.RedisError, RedisClusterException):
            # Redis away mid-run: retried, never dropped
            log.exception("run %s on thread %s failed; it will be retried", run_id, thread)
        finally:
            beating.cancel()
            self._executors.pop(entry_id.decode(), None)
        if run_id in self.handed_back:
            return
        retry = outcome in ("busy", "wait", None)
        delay_s = backoff(self._count(run_id, retry)) if retry else None
        failures = 0
        while True:  # Redis refusing the settling (out of memory, say) is waited out
            try:
                await self.settle(client, entry_id, thread, run_id, outcome, delay_s)
                return
            except redis.RedisError as exc:
                failures += 1
                if self.stop.is_set():  # left pending: whoever claims it settles it
                    return
                log.warning(
                    "run %s: its queue entry could not be settled (%s); retrying", run_id, exc
                )
                await asyncio.sleep(backoff(failures))

    async def settle(
        self,
        client: AsyncClient,
        entry_id: bytes,
        thread: str,
        run_id: str,
        outcome: Outcome | None,
        delay_s: float | None,
    ) -> None:
        """Acknowledge and delete the entry.

        A run to retry (`delay_s`) goes back on the delayed queue with it (one step, but on a
        cluster, whose queue keys live on other slots).
        """
        pipe: Any = client.pipeline(transaction=not self.store.cluster)
        if delay_s is not None:
            pipe.zadd(self.store.delayed(), {member(thread, run_id): time.time() + delay_s})
        pipe.xack(self.queue, GROUP, entry_id)
        pipe.xdel(self.queue, entry_id)  # done with: the queue holds only what is to do
        await pipe.execute()
        if outcome == "done":
            await self.steps.wake_next(thread)

    def _count(self, run_id: str, retry: bool) -> int:
        if not retry:
            self.tries.pop(run_id, None)
            return 0
        if len(self.tries) > MAX_TRIES_KEPT:
            self.tries.clear()
        self.tries[run_id] = self.tries.get(run_id, 0) + 1
        return self.tries[run_id]

    async def drain(self) -> None:
        """Let the runs in flight finish within the grace period; hand back the rest.

        The webhooks of the runs that ended get what is left of it (they are sent after).
        """
        began = time.monotonic()
        going = await self.jobs.settled(max(self.grace_s - 1.0, 0.0))
        # Read on the loop: a run ending while the hand-back runs drops its own entry.
        handing = {e: self._executors[e] for e in going if e in self._executors}
        if handing:
            await asyncio.to_thread(self.hand_back, handing)
            await self.jobs.settled(1.0)  # their executors see another owner and stop writing
        await hand(SENDER.drain(max(self.grace_s - (time.monotonic() - began), 0.0)))

    def hand_back(self, entries: dict[str, tuple[Executor, str, str]]) -> None:
        for entry, (executor, thread, run_id) in entries.items():
            self.store.disown(thread, run_id, executor.owner)
            self.handed_back.append(run_id)
            with self.orch.client.pipeline(transaction=not self.store.cluster) as pipe:
                pipe.zadd(self.store.delayed(), {member(thread, run_id): time.time()})
                pipe.xack(self.queue, GROUP, entry)
                pipe.xdel(self.queue, entry)
                pipe.execute()
            log.warning("worker %s: run %s handed back unfinished", self.name, run_id)
