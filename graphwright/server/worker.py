"""``graphwright worker``: take background runs from a Redis Streams consumer group.

A worker that dies leaves its entry pending; another claims it once it has been idle
for ``claim_idle_ms`` and finishes the run from its checkpoint. A live worker keeps
its entry fresh with a heartbeat that retries on Redis errors and only ever refreshes
an entry it still owns. A run whose thread is busy, or that is not yet first in its
thread's line, goes back to the delayed queue: a retry, never an error.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from typing import Any

import redis

from checkpoints.errors import RedisUnavailableError
from graphwright.orchestrator import Orchestrator
from graphwright.server.execution import Executor
from graphwright.server.runs import GROUP, RunStore
from graphwright_errors import GraphwrightError, NotFoundError

log = logging.getLogger(__name__)
RETRY_S = 0.2


class Worker:
    """One consumer of the run queue."""

    def __init__(self, orch: Orchestrator, *, name: str | None = None,
                 claim_idle_ms: int = 60_000, block_ms: int = 1_000) -> None:
        self.orch = orch
        self.store = RunStore(orch.client, orch.keys)
        self.queue = orch.keys.queue()
        self.name = name or f"{socket.gethostname()}-{os.getpid()}"
        self.executor = Executor(orch, self.store)
        self.claim_idle_ms = claim_idle_ms
        self.block_ms = block_ms
        self.stop = threading.Event()

    def ensure_group(self) -> None:
        try:
            self.orch.client.xgroup_create(self.queue, GROUP, id="0", mkstream=True)
        except redis.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):  # the group exists already: fine
                raise

    def run_forever(self) -> None:
        """Process runs until stopped; an outage of any length is waited out, never an exit."""
        ready = False
        while not self.stop.is_set():
            try:
                if not ready:
                    self.ensure_group()
                    ready = True
                self.step()
            except (redis.ConnectionError, redis.TimeoutError, RedisUnavailableError) as exc:
                log.warning("worker %s: Redis is not reachable (%s); waiting for it", self.name,
                            type(exc).__name__)
                self.stop.wait(1.0)

    def step(self) -> bool:
        """Claim one abandoned entry, or read one new entry; process it. True if there was one."""
        self.store.release_due()
        claimed: Any = self.orch.client.xautoclaim(self.queue, GROUP, self.name, self.claim_idle_ms,
                                                   start_id="0-0", count=1)
        entries: list[Any] = list(claimed[1]) if claimed else []
        if not entries:
            read: Any = self.orch.client.xreadgroup(GROUP, self.name, {self.queue: ">"}, count=1,
                                                    block=self.block_ms)
            entries = list(read[0][1]) if read else []
        for entry_id, fields in entries:
            if fields:
                self.process(entry_id, {k.decode(): v.decode() for k, v in fields.items()})
            else:  # trimmed away: nothing left to run
                self.orch.client.xack(self.queue, GROUP, entry_id)
        return bool(entries)

    def process(self, entry_id: bytes, fields: dict[str, str]) -> None:
        thread, run_id = fields["thread_id"], fields["run_id"]
        done = threading.Event()
        beat = threading.Thread(target=self._heartbeat, args=(entry_id, done), daemon=True)
        beat.start()
        outcome = "done"
        try:
            outcome = self.executor.run(thread, run_id)
        except NotFoundError:
            log.warning("run %s on thread %s no longer exists; dropping it", run_id, thread)
        except GraphwrightError:
            log.exception("run %s on thread %s failed", run_id, thread)
        finally:
            done.set()
        # Back on the delayed queue with the acknowledgement (one step, but on a cluster,
        # whose queue keys live on other slots): try again shortly; order is kept by the line.
        with self.orch.client.pipeline(transaction=not self.store.cluster) as pipe:
            if outcome in ("busy", "wait"):
                pipe.zadd(self.store.delayed(), {json.dumps([thread, run_id]): time.time() + RETRY_S})
            pipe.xack(self.queue, GROUP, entry_id)
            pipe.execute()

    def _heartbeat(self, entry_id: bytes, done: threading.Event) -> None:
        """Reset the entry's idle time while the run is alive and the entry still ours."""
        while not done.wait(self.claim_idle_ms / 3000):
            try:
                if not self.store.script("HEARTBEAT", [self.queue], [GROUP, entry_id, self.name]):
                    log.warning("worker %s: run entry %r was claimed by another worker", self.name, entry_id)
                    return
            except (redis.RedisError, GraphwrightError):
                log.warning("worker %s: heartbeat failed; retrying", self.name)
