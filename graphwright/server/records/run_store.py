"""HTTP runs: their records in Redis and every transition of one, each an atomic script.

A run is created (and, for background runs, queued) in one step that also enforces the
thread's `multitask_strategy`; it is picked up by whoever holds the thread's lock and is
first in the thread's line; it ends with its status and the end of its event stream in one
step, refused if another executor took the run over meanwhile. `RunStore` is made of
parts: its reads and listings (`_run_reads`) and the delayed queue (`_run_queue`) are
modules of their own, over what they share (`_run_base`). The steps an executing run takes
(pickup, events, its fenced update, its end) are `run_steps.RunSteps`, coroutines on the run
loop.
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Literal

from graphwright import run_status
from graphwright.checkpoints.fenced import fenced_hset
from graphwright.locking import ThreadBusyError
from graphwright.server.records._run_base import RETENTION_S, SEALED_RUN
from graphwright.server.records._run_queue import GROUP, RunQueue, member
from graphwright.server.records._run_reads import LIST_PAGE, RunReads, iso
from graphwright.server.records.event_log import END, stream_key
from graphwright.server.schemas.run_bodies import Run, RunCreate
from graphwright_errors import ConflictError

if TYPE_CHECKING:
    from graphwright.orchestrator import Orchestrator

__all__ = [
    "GROUP",
    "LIST_PAGE",
    "RETENTION_S",
    "SEALED_RUN",
    "TERMINAL",
    "Pickup",
    "RunExistsError",
    "RunStore",
    "iso",
    "member",
    "new_run_id",
]

TERMINAL = run_status.TERMINAL
Pickup = Literal["start", "recover", "wait", "gone"]


class RunExistsError(ConflictError):
    """A run id that is already taken: a create never resets or queues an existing run again."""


def new_run_id() -> str:
    """Time-ordered like the reference's (a UUID v7 layout), so listing by id is by age."""
    ms = int(time.time() * 1000)
    rand = uuid.uuid4().int & ((1 << 74) - 1)
    value = (
        (ms << 80) | (0x7 << 76) | ((rand >> 62) << 64) | (0b10 << 62) | (rand & ((1 << 62) - 1))
    )
    return str(uuid.UUID(int=value))


class RunStore(RunReads, RunQueue):
    """Run records: one hash per run, listed per thread, all under the thread's hash tag."""

    @classmethod
    def of(cls, orch: Orchestrator) -> RunStore:
        """The store with the Orchestrator's retention and claim window."""
        settings = orch.settings
        retention = settings.run_retention_s or settings.checkpoint_ttl_s or RETENTION_S
        return cls(
            orch.client,
            orch.keys,
            retention_s=retention,
            claim_window_s=settings.claim_idle_ms / 1000,
        )

    # --- creating --------------------------------------------------------------

    def create(
        self,
        thread_id: str,
        body: RunCreate,
        *,
        queue: bool,
        delay_s: float = 0,
        run_id: str | None = None,
        lease_s: float | None = None,
        **extra: str,
    ) -> Run:
        """Record the run and hand it to an owner in one step.

        The queue (`queue`), the delayed queue (`delay_s`), or, with `lease_s`, the caller itself,
        leased on the delayed queue until then. Refused with ThreadBusyError when the thread is busy
        and the strategy is `reject`, with RunExistsError when `run_id` (a cron's slot) is taken.
        """
        run_id, now = run_id or new_run_id(), time.time()
        strategy = body.multitask_strategy or "reject"
        record = {
            "run_id": run_id,
            "thread_id": thread_id,
            "assistant_id": body.assistant_id,
            "created_at": str(now),
            "updated_at": str(now),
            "status": "pending",
            "body": body.model_dump_json(),
            "started": "0",
            "error": "",
            **extra,
        }
        due = now + (lease_s if lease_s is not None else delay_s)
        mode = (
            "delay"
            if lease_s is not None or (queue and delay_s > 0)
            else "queue"
            if queue
            else "none"
        )
        key = self.keys.run_record(thread_id, run_id)
        flat = [item for pair in self._sealed(key, record).items() for item in pair]
        queues = [key, key] if self.cluster else [self.keys.queue(), self.delayed()]
        if self.cluster and mode != "none":  # another slot: its owner first, so a crash is swept
            self.requeue(thread_id, run_id, due - now if mode == "delay" else self.claim_window_s)
        outcome = self.script(
            "CREATE",
            [
                key,
                self.keys.thread_runs(thread_id),
                self.inflight(thread_id),
                self.keys.registry(thread_id),
                *queues,
                self.keys.run_signal(thread_id),
            ],
            [
                run_id,
                now,
                strategy,
                "none" if self.cluster else mode,
                due,
                self.record_prefix(thread_id),
                thread_id,
                member(thread_id, run_id),
                self.retention_s,
                *flat,
            ],
        )
        if isinstance(outcome, list):  # created: the pending runs it cancelled leave the queue
            outcome, dropped = outcome[0], [r.decode() for r in outcome[1:]]
            if dropped:
                self.redis.zrem(self.delayed(), *(member(thread_id, r) for r in dropped))
        if outcome != b"ok" and self.cluster and mode != "none":
            self.release_lease(thread_id, run_id)
        if outcome == b"exists":
            raise RunExistsError(f"run {run_id!r} exists already on thread {thread_id!r}")
        if outcome == b"busy":
            raise ThreadBusyError(
                f"thread {thread_id!r} is busy with another run (multitask_strategy {strategy})"
            )
        if self.cluster and mode == "queue":  # queued: the safety lease can go
            self.redis.xadd(self.keys.queue(), {"thread_id": thread_id, "run_id": run_id})
            self.release_lease(thread_id, run_id)
        if self.replicas is not None:  # the run and its input outlive a failover once created
            self.replicas.acknowledge(
                self.redis,
                self.keys.replica_ack(thread_id),
                f"run {run_id} of thread {thread_id!r}",
            )
        return self.to_run(record)

    # --- transitions -----------------------------------------------------------

    def update(self, thread_id: str, run_id: str, fence: int | None = None, **fields: str) -> None:
        """Set fields of the run's record.

        With the executor's `fence`, refused (LockLostError) once another executor took the thread
        over.
        """
        key, mapping = self.update_fields(thread_id, run_id, fields)
        fenced_hset(self.redis, self.keys, thread_id, key, mapping, fence)

    def update_fields(
        self, thread_id: str, run_id: str, fields: dict[str, str]
    ) -> tuple[str, dict[str, str | bytes]]:
        """The record's key and the fields `update` writes, sealed (sent by `RunSteps`)."""
        key = self.keys.run_record(thread_id, run_id)
        return key, self._sealed(key, {**fields, "updated_at": str(time.time())})

    def cancel(self, thread_id: str, run_id: str, action: str = "interrupt") -> str:
        """Cancel a pending run now (atomic with its pickup) or ask a running one to stop."""
        got = self.script(
            "CANCEL",
            [
                self.keys.run_record(thread_id, run_id),
                self.inflight(thread_id),
                stream_key(self.keys, thread_id, run_id),
                self.keys.run_end(thread_id, run_id),
            ],
            [run_id, action, time.time(), self.events_ttl(), END, self.retention_s],
        )
        outcome: str = got.decode()
        if outcome == "cancelled":  # nothing is to run it now: its delay or lease goes too
            self.release_lease(thread_id, run_id)
        return outcome

    def disown(self, thread_id: str, run_id: str, owner: str) -> bool:
        """Take the run from `owner`, who is to stop writing to it; False if not its."""
        return bool(self.script("DISOWN", [self.keys.run_record(thread_id, run_id)], [owner]))

    def delete(self, thread_id: str, run_id: str) -> None:
        with self.redis.pipeline(transaction=True) as pipe:
            pipe.delete(
                self.keys.run_record(thread_id, run_id),
                stream_key(self.keys, thread_id, run_id),
                self.keys.run_end(thread_id, run_id),
            )
            pipe.zrem(self.keys.thread_runs(thread_id), run_id)
            pipe.zrem(self.inflight(thread_id), run_id)
            pipe.execute()
