"""``graphwright worker``: take background runs from a Redis Streams consumer group.

A worker that dies leaves its entry pending; another claims it once it has been idle
for ``claim_idle_ms`` and finishes the run from its checkpoint. A live worker keeps
its entry fresh with a heartbeat, so it is not claimed from under it.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from typing import Any

import redis

from checkpoints.errors import GraphwrightError, NotFoundError
from graphwright.locking import ThreadBusyError
from graphwright.orchestrator import Orchestrator
from graphwright.server.runs import GROUP, TERMINAL, RunStore, execute, recover

log = logging.getLogger(__name__)


class Worker:
    """One consumer of the run queue."""

    def __init__(self, orch: Orchestrator, *, name: str | None = None,
                 claim_idle_ms: int = 60_000, block_ms: int = 1_000) -> None:
        self.orch = orch
        self.store = RunStore(orch.client, orch.keys)
        self.queue = orch.keys.queue()
        self.name = name or f"{socket.gethostname()}-{os.getpid()}"
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
        self.ensure_group()
        while not self.stop.is_set():
            self.step()

    def step(self) -> bool:
        """Claim one abandoned entry, or read one new entry; process it. True if there was one."""
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
        heartbeat = threading.Event()
        beat = threading.Thread(target=self._heartbeat, args=(entry_id, heartbeat), daemon=True)
        beat.start()
        try:
            run = self.store.get(thread, run_id)
            if run.status not in TERMINAL:  # finished or cancelled ones are only acknowledged
                body = self.store.body(thread, run_id)
                started = self.store.raw(thread, run_id).get("started") == "1"
                events = recover(self.orch, self.store, run, body) if started else \
                    execute(self.orch, self.store, run, body)
                for _ in events:  # drive the run to its end
                    pass
        except ThreadBusyError:
            log.info("run %s: thread %s is busy; leaving the entry for later", run_id, thread)
            return  # not acknowledged: delivered again after the claim timeout
        except NotFoundError:
            log.warning("run %s on thread %s no longer exists; dropping it", run_id, thread)
        except GraphwrightError:
            log.exception("run %s on thread %s failed", run_id, thread)
        finally:
            heartbeat.set()
        self.orch.client.xack(self.queue, GROUP, entry_id)

    def _heartbeat(self, entry_id: bytes, done: threading.Event) -> None:
        """Reset the entry's idle time while the run is alive, so nobody claims it."""
        while not done.wait(self.claim_idle_ms / 3000):
            try:
                self.orch.client.xclaim(self.queue, GROUP, self.name, 0, [entry_id], justid=True)
            except redis.RedisError:
                return
