"""HTTP runs: their records in Redis and every transition of one, each an atomic script.

A run is created (and, for background runs, queued) in one step that also enforces the
thread's `multitask_strategy`; it is picked up by whoever holds the thread's lock and is
first in the thread's line; it ends with its status and the end of its event stream in one
step, refused if another executor took the run over meanwhile.
"""

from __future__ import annotations

import builtins
import json
import time
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

import redis
from redis.cluster import RedisCluster

from graphwright import run_status
from graphwright.checkpoints.errors import RedisUnavailableError
from graphwright.checkpoints.fenced import fenced_hset
from graphwright.checkpoints.keys import Keys
from graphwright.checkpoints.replicas import ReplicaWait
from graphwright.locking import ThreadBusyError
from graphwright.server.records import run_scripts
from graphwright.server.records.event_log import END, TTL_S, encode, stream_key
from graphwright.server.runs.payloads import run_kwargs
from graphwright.server.schemas.run_bodies import Run, RunCreate, RunStatus
from graphwright_errors import ConflictError, NotFoundError

if TYPE_CHECKING:
    from graphwright.orchestrator import Orchestrator

GROUP = "workers"
SEALED_RUN = frozenset({b"body", b"error", b"output"})  # fields of a run record sealed at rest
TERMINAL = run_status.TERMINAL
Pickup = Literal["start", "recover", "wait", "gone"]
RETENTION_S = 7 * 24 * 3600  # an ended run's record, without a thread TTL or a setting
LIST_PAGE = 100  # run records read per round trip while a listing filters by status


class RunExistsError(ConflictError):
    """A run id that is already taken: a create never resets or queues an existing run again."""


def iso(ts: float) -> str:
    """A stored Unix time as ISO 8601 in UTC, as the API answers."""
    return datetime.fromtimestamp(ts, UTC).isoformat()


def member(thread_id: str, run_id: str) -> str:
    """A run's entry on the delayed queue, spelled one way by every writer."""
    return json.dumps([thread_id, run_id])


def new_run_id() -> str:
    """Time-ordered like the reference's (a UUID v7 layout), so listing by id is by age."""
    ms = int(time.time() * 1000)
    rand = uuid.uuid4().int & ((1 << 74) - 1)
    value = (
        (ms << 80) | (0x7 << 76) | ((rand >> 62) << 64) | (0b10 << 62) | (rand & ((1 << 62) - 1))
    )
    return str(uuid.UUID(int=value))


class RunStore:
    """Run records: one hash per run, listed per thread, all under the thread's hash tag."""

    def __init__(
        self,
        client: redis.Redis,
        keys: Keys,
        *,
        retention_s: int = RETENTION_S,
        claim_window_s: float = 60.0,
    ) -> None:
        self.redis = client
        self.keys = keys
        self.retention_s = retention_s
        self.claim_window_s = claim_window_s  # how long a silent owner keeps a run
        self.cluster = isinstance(client, RedisCluster)  # queue keys live on other slots
        self.replicas = ReplicaWait.from_env()  # GRAPHWRIGHT_WAIT_REPLICAS, as for checkpoints
        self._scripts = {
            name: client.register_script(getattr(run_scripts, name))
            for name in (
                "CREATE",
                "PICKUP",
                "PUBLISH",
                "FINISH",
                "CANCEL",
                "RELEASE_DUE",
                "HEARTBEAT",
                "TRIM",
                "CLAIM_DUE",
                "DISOWN",
            )
        }

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

    def script(self, name: str, keys: list[str], args: list[Any]) -> Any:
        try:
            return self._scripts[name](keys=keys, args=args)
        except redis.ConnectionError as exc:
            raise RedisUnavailableError(f"cannot reach Redis for the run store: {exc}") from exc

    def inflight(self, thread_id: str) -> str:
        return f"{self.keys.thread_tag(thread_id)}:inflight"

    def delayed(self) -> str:
        return f"{self.keys.queue()}:delayed"

    def record_prefix(self, thread_id: str) -> str:
        return self.keys.run_record(thread_id, "")

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

    # --- reading ---------------------------------------------------------------

    def raw(self, thread_id: str, run_id: str) -> dict[str, str]:
        key = self.keys.run_record(thread_id, run_id)
        data: dict[bytes, bytes] = self.redis.hgetall(key)  # type: ignore[assignment]  # bytes client
        if not data:
            raise NotFoundError(f"no run {run_id!r} on thread {thread_id!r}")
        return self.opened(key, data)

    def opened(self, key: str, data: dict[bytes, bytes]) -> dict[str, str]:
        """A run record as read from Redis (`HGETALL` of `key`), its sealed fields opened."""
        return {
            k.decode(): v.decode()
            if k not in SEALED_RUN or v in run_scripts.CLEAR_ERRORS
            else self.keys.sealer.open_text(v, key, k)
            for k, v in data.items()
        }

    def get(self, thread_id: str, run_id: str) -> Run:
        return self.to_run(self.raw(thread_id, run_id))

    def body(self, thread_id: str, run_id: str) -> RunCreate:
        return RunCreate.model_validate_json(self.raw(thread_id, run_id)["body"])

    def list(
        self, thread_id: str, limit: int = 10, offset: int = 0, status: str | None = None
    ) -> builtins.list[Run]:
        """The thread's runs, newest first, paged in Redis.

        Without a status only the page's records are read; with one, pages of them until enough
        match.
        """
        key = self.keys.thread_runs(thread_id)
        start, skip = (offset, 0) if status is None else (0, offset)
        size = limit + skip if status is None else max(LIST_PAGE, limit + skip)
        found: builtins.list[Run] = []
        while len(found) < skip + limit:
            got: Any = self.redis.zrevrange(key, start, start + size - 1)
            ids: builtins.list[bytes] = got
            if not ids:
                break
            start += len(ids)
            found += [
                run
                for run in self._records(thread_id, [i.decode() for i in ids])
                if status is None or run.status == status
            ]
        return found[skip : skip + limit]

    def _records(self, thread_id: str, run_ids: builtins.list[str]) -> builtins.list[Run]:
        """The runs of `run_ids` read in one round trip, in order; those gone are left out."""
        keys = [self.keys.run_record(thread_id, r) for r in run_ids]
        with self.redis.pipeline(transaction=False) as pipe:  # one slot: the thread's tag
            for key in keys:
                pipe.hgetall(key)
            got: builtins.list[dict[bytes, bytes]] = pipe.execute()
        return [
            self.to_run(self.opened(key, data)) for key, data in zip(keys, got, strict=True) if data
        ]

    def active(self, thread_id: str) -> builtins.list[str]:
        ids: builtins.list[bytes] = self.redis.zrange(self.inflight(thread_id), 0, -1)  # type: ignore[assignment]  # bytes client
        return [i.decode() for i in ids]

    def signals(self, thread_id: str, run_id: str) -> tuple[str | None, str | None]:
        """The run's current owner and the cancel action asked for it, if any."""
        got: builtins.list[bytes | None] = self.redis.hmget(
            self.keys.run_record(thread_id, run_id),  # type: ignore[assignment]  # bytes client
            ["owner", "cancel"],
        )
        owner, cancel = got
        return (owner.decode() if owner else None, cancel.decode() if cancel else None)

    # --- transitions -----------------------------------------------------------

    def update(self, thread_id: str, run_id: str, fence: int | None = None, **fields: str) -> None:
        """Set fields of the run's record.

        With the executor's `fence`, refused (LockLostError) once another executor took the thread
        over.
        """
        mapping: dict[str, str] = {**fields, "updated_at": str(time.time())}
        key = self.keys.run_record(thread_id, run_id)
        fenced_hset(self.redis, self.keys, thread_id, key, self._sealed(key, mapping), fence)

    def _sealed(self, key: str, record: dict[str, str]) -> dict[str, str | bytes]:
        return {
            k: self.keys.sealer.seal_text(v, key, k) if k.encode() in SEALED_RUN else v
            for k, v in record.items()
        }

    def pickup(self, thread_id: str, run_id: str, owner: str) -> Pickup:
        """Mark the run running for `owner` (who holds the thread lock) if it is its turn."""
        got = self.script(
            "PICKUP",
            [self.keys.run_record(thread_id, run_id), self.inflight(thread_id)],
            [run_id, owner, time.time(), self.record_prefix(thread_id)],
        )
        return got.decode()  # type: ignore[no-any-return]

    def publish(
        self, thread_id: str, run_id: str, owner: str, event: str, data: Any
    ) -> tuple[str, str | None] | None:
        """Append an event to the run's stream, unless someone else owns the run now (None).

        Returns the entry id and the cancel action asked for the run, if any.
        """
        events = stream_key(self.keys, thread_id, run_id)
        got = self.script(
            "PUBLISH",
            [self.keys.run_record(thread_id, run_id), events],
            [
                owner,
                event,
                self.keys.sealer.seal_text(encode(data), events, "data"),
                uuid.uuid4().hex,
            ],
        )  # a replay of this call is added once
        if got is None:
            return None
        entry_id, cancel = got
        return entry_id.decode(), cancel.decode() or None

    def finish(
        self,
        thread_id: str,
        run_id: str,
        owner: str,
        status: RunStatus,
        error: str = "",
        lock_value: str = "",
        cap_s: int | None = None,
        delete: bool = False,
    ) -> bool:
        """Record how the run ended and close its event stream; False if the run is not ours.

        The thread's lock held with `lock_value` is released in the same step. `cap_s` (the thread's
        own TTL) bounds how long the record and its streams are kept; with `delete` (a rollback) the
        run and its events go in the same step.
        """
        key = self.keys.run_record(thread_id, run_id)
        retention, events_ttl = self.retention_s, self.events_ttl()
        if cap_s is not None:
            retention, events_ttl = min(retention, cap_s), min(events_ttl, cap_s)
        got = self.script(
            "FINISH",
            [
                key,
                self.inflight(thread_id),
                stream_key(self.keys, thread_id, run_id),
                self.keys.thread_runs(thread_id),
                self.keys.registry(thread_id),
                self.keys.run_end(thread_id, run_id),
                self.keys.lock(thread_id),
            ],
            [
                run_id,
                owner,
                status,
                self.keys.sealer.seal_text(error, key, "error"),
                time.time(),
                retention,
                END,
                self.record_prefix(thread_id),
                events_ttl,
                lock_value,
                "1" if delete else "0",
            ],
        )
        return bool(got)

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

    def events_ttl(self) -> int:
        return min(TTL_S, self.retention_s)

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

    def disown(self, thread_id: str, run_id: str, owner: str) -> bool:
        """Take the run from `owner`, who is to stop writing to it; False if not its."""
        return bool(self.script("DISOWN", [self.keys.run_record(thread_id, run_id)], [owner]))

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

    def wake_next(self, thread_id: str) -> None:
        """Bring the retry of the thread's next run in line forward to now.

        It need not sit out its backoff once the run before it has ended.
        """
        first: builtins.list[bytes] = self.redis.zrange(self.inflight(thread_id), 0, 0)  # type: ignore[assignment]  # bytes client
        if first:
            self.redis.zadd(
                self.delayed(),
                {member(thread_id, first[0].decode()): time.time()},
                xx=True,
                lt=True,
            )

    def requeue(self, thread_id: str, run_id: str, delay_s: float) -> None:
        self.redis.zadd(self.delayed(), {member(thread_id, run_id): time.time() + delay_s})

    def run_ids(self, thread_id: str) -> builtins.list[str]:
        """Every run the thread still lists, oldest first."""
        ids: Any = self.redis.zrange(self.keys.thread_runs(thread_id), 0, -1)
        return [i.decode() for i in ids]

    def unschedule(self, thread_id: str, run_ids: builtins.list[str]) -> None:
        """Take runs of a deleted thread off the delayed queue (their records went with its keys).

        None is queued later for a thread that is gone.
        """
        if run_ids:
            self.redis.zrem(self.delayed(), *(member(thread_id, r) for r in run_ids))

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

    @staticmethod
    def to_run(record: dict[str, str]) -> Run:
        body = json.loads(record["body"])
        return Run(
            run_id=record["run_id"],
            thread_id=record["thread_id"],
            assistant_id=record["assistant_id"],
            created_at=iso(float(record["created_at"])),
            updated_at=iso(float(record["updated_at"])),
            status=record["status"],  # type: ignore[arg-type]
            metadata=body.get("metadata") or {},
            multitask_strategy=body.get("multitask_strategy") or "enqueue",
            kwargs=run_kwargs(record),
        )
