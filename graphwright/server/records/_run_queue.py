"""The queue of runs: the delayed runs, leases on them, and trimming the workers' stream.

A run's entry on the delayed queue is `member(thread_id, run_id)`; it becomes due when its
delay or its lease ends and is then moved onto the workers' stream.
"""

from __future__ import annotations

import builtins
import json
import time

from graphwright.server.records._run_base import RunStoreBase

GROUP = "workers"


def member(thread_id: str, run_id: str) -> str:
    """A run's entry on the delayed queue, spelled one way by every writer."""
    return json.dumps([thread_id, run_id])


class RunQueue(RunStoreBase):
    """The run store's delayed queue and the workers' stream."""

    def release_due(self) -> int:
        """Move delayed runs whose time has come onto the queue."""
        if not self.cluster:
            return int(
                self.script("RELEASE_DUE", [self.delayed(), self.keys.queue()], [time.time()])
            )
        due: builtins.list[bytes] = self.redis.zrangebyscore(
            self.delayed(), "-inf", time.time(), 0, 50
        )  # type: ignore[assignment]  # bytes client
        for item in due:
            # The queue is another slot: whoever pushes the entry's time on queues it, then
            # removes it; a crash between leaves it due again, never lost (at worst queued twice).
            now = time.time()
            if self.script("CLAIM_DUE", [self.delayed()], [item, now, now + self.claim_window_s]):
                thread_id, run_id = json.loads(item)
                self.redis.xadd(self.keys.queue(), {"thread_id": thread_id, "run_id": run_id})
                self.redis.zrem(self.delayed(), item)
        return len(due)

    def trim_queue(self) -> int:
        """Drop the queue's entries every worker is done with (see `run_scripts.TRIM`)."""
        return int(self.script("TRIM", [self.keys.queue()], [GROUP]))

    def lease(self, thread_id: str, run_id: str, lease_s: float, *, renew: bool = False) -> None:
        """Hold a run executing in the API process on the delayed queue, due when the lease ends.

        A run whose process died is queued for the workers then. A renewal never puts back a lease a
        worker has taken.
        """
        self.redis.zadd(
            self.delayed(), {member(thread_id, run_id): time.time() + lease_s}, xx=renew
        )

    def release_lease(self, thread_id: str, run_id: str) -> None:
        self.redis.zrem(self.delayed(), member(thread_id, run_id))

    def requeue(self, thread_id: str, run_id: str, delay_s: float) -> None:
        self.redis.zadd(self.delayed(), {member(thread_id, run_id): time.time() + delay_s})

    def unschedule(self, thread_id: str, run_ids: builtins.list[str]) -> None:
        """Take runs of a deleted thread off the delayed queue (their records went with its keys).

        None is queued later for a thread that is gone.
        """
        if run_ids:
            self.redis.zrem(self.delayed(), *(member(thread_id, r) for r in run_ids))
