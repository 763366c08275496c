"""The run store's steps an executing run takes, on the run loop's asyncio client.

Pick the run up, publish its events (each reply says whether it is still ours and whether a
cancel was asked), set fields of its record under the lock's fence, and finish it (which gives
the thread's lock back). The run store's scripts (`run_scripts`), sent as coroutines on the run
loop: an HTTP run makes no thread hop for Redis.
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any, cast

import redis

from graphwright.aconnect import AsyncScript, batch
from graphwright.checkpoints.errors import LockLostError, RedisUnavailableError
from graphwright.checkpoints.fenced import HSET
from graphwright.server.records import run_scripts
from graphwright.server.records._run_queue import member
from graphwright.server.records.event_log import END, encode, stream_key
from graphwright.server.records.run_store import Pickup, RunStore
from graphwright.server.schemas.run_bodies import RunCreate, RunStatus
from graphwright_errors import NotFoundError

if TYPE_CHECKING:
    from graphwright.checkpoints.saver_base import AsyncClient

_PICKUP, _PUBLISH, _FINISH = (
    AsyncScript(run_scripts.PICKUP),
    AsyncScript(run_scripts.PUBLISH),
    AsyncScript(run_scripts.FINISH),
)
_HSET = AsyncScript(HSET)


def published(got: Any) -> tuple[str, str | None] | None:
    """The PUBLISH script's reply: the entry id and the cancel asked for; None: not ours."""
    if got is None:
        return None
    entry_id, cancel = got
    return entry_id.decode(), cancel.decode() or None


class RunSteps:
    """An executing run's record writes and reads, as coroutines on the run loop."""

    def __init__(self, store: RunStore, client: AsyncClient) -> None:
        self.store, self.client, self.keys = store, client, store.keys

    async def _script(self, script: AsyncScript, keys: list[str], args: list[Any]) -> Any:
        try:
            (got,) = await batch(self.client, [script.command(keys, args)])
        except redis.ConnectionError as exc:
            raise RedisUnavailableError(f"cannot reach Redis for the run store: {exc}") from exc
        return got

    async def pickup(self, thread_id: str, run_id: str, owner: str) -> Pickup:
        """Mark the run running for `owner` (who holds the thread lock) if it is its turn."""
        store = self.store
        keys = [self.keys.run_record(thread_id, run_id), store.inflight(thread_id)]
        args = [run_id, owner, time.time(), store.record_prefix(thread_id)]
        got = await self._script(_PICKUP, keys, args)
        return cast(Pickup, got.decode() if isinstance(got, bytes) else got)

    async def publish(
        self, thread_id: str, run_id: str, owner: str, event: str, data: Any
    ) -> tuple[str, str | None] | None:
        """Append an event to the run's stream: its entry id and the cancel asked for.

        None once someone else owns the run. A replay of the call adds the event once.
        """
        events = stream_key(self.keys, thread_id, run_id)
        sealed = self.keys.sealer.seal_text(encode(data), events, "data")
        keys = [self.keys.run_record(thread_id, run_id), events]
        # the last argument: a replay of this call adds the event once
        got = await self._script(_PUBLISH, keys, [owner, event, sealed, uuid.uuid4().hex])
        return published(got)

    async def update(self, thread_id: str, run_id: str, fence: int | None, **fields: str) -> None:
        """`RunStore.update`: refused (LockLostError) once another executor took the thread."""
        key, mapping = self.store.update_fields(thread_id, run_id, fields)
        pairs = [x for kv in mapping.items() for x in kv]
        args = ["" if fence is None else str(fence), *pairs]
        if not await self._script(_HSET, [key, self.keys.fence(thread_id)], args):
            raise LockLostError(
                f"thread {thread_id!r} is held by a newer run; {key} was not written"
            )

    async def finish(
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
        """Record how the run ended, close its event stream, give the lock (`lock_value`) back.

        False if the run is not ours. `cap_s` (the thread's own TTL) bounds how long the record
        and its streams are kept; with `delete` (a rollback) the run and its events go too.
        """
        store, k = self.store, self.keys
        key = k.run_record(thread_id, run_id)
        retention, events_ttl = store.retention_s, store.events_ttl()
        if cap_s is not None:
            retention, events_ttl = min(retention, cap_s), min(events_ttl, cap_s)
        keys = [
            key,
            store.inflight(thread_id),
            stream_key(k, thread_id, run_id),
            k.thread_runs(thread_id),
            k.registry(thread_id),
            k.run_end(thread_id, run_id),
            k.lock(thread_id),
        ]
        args = [
            run_id,
            owner,
            status,
            k.sealer.seal_text(error, key, "error"),
            time.time(),
            retention,
            END,
            store.record_prefix(thread_id),
            events_ttl,
            lock_value,
            "1" if delete else "0",
        ]
        return bool(await self._script(_FINISH, keys, args))

    async def raw(self, thread_id: str, run_id: str) -> dict[str, str]:
        """`RunStore.raw`: the record, its sealed fields opened."""
        key = self.keys.run_record(thread_id, run_id)
        try:
            data: Any = await self.client.hgetall(key)
        except redis.ConnectionError as exc:
            raise RedisUnavailableError(f"cannot reach Redis for the run store: {exc}") from exc
        if not data:
            raise NotFoundError(f"no run {run_id!r} on thread {thread_id!r}")
        return self.store.opened(key, data)

    async def body(self, thread_id: str, run_id: str) -> RunCreate:
        """`RunStore.body`."""
        return RunCreate.model_validate_json((await self.raw(thread_id, run_id))["body"])

    async def signals(self, thread_id: str, run_id: str) -> tuple[str | None, str | None]:
        """The run's owner and the cancel asked for it, if any."""
        key = self.keys.run_record(thread_id, run_id)
        got: Any = await self.client.hmget(key, ["owner", "cancel"])
        owner, cancel = got
        return (owner.decode() if owner else None, cancel.decode() if cancel else None)

    async def lease(self, thread_id: str, run_id: str, lease_s: float) -> None:
        """Renew the run's lease on the delayed queue (`RunQueue.lease` with `renew`)."""
        due = {member(thread_id, run_id): time.time() + lease_s}
        await self.client.zadd(self.store.delayed(), due, xx=True)

    async def release_lease(self, thread_id: str, run_id: str) -> None:
        """`RunQueue.release_lease`: the run is no longer due on the delayed queue."""
        await self.client.zrem(self.store.delayed(), member(thread_id, run_id))

    async def wake_next(self, thread_id: str) -> None:
        """Bring the retry of the thread's next run in line forward to now.

        It need not sit out its backoff once the run before it has ended.
        """
        first: Any = await self.client.zrange(self.store.inflight(thread_id), 0, 0)
        if first:
            due = {member(thread_id, first[0].decode()): time.time()}
            await self.client.zadd(self.store.delayed(), due, xx=True, lt=True)

    async def fence(self, thread_id: str) -> int:
        """Move the thread's fence on (a cancel): every write of the old token is refused."""
        return int(await self.client.incr(self.keys.fence(thread_id)))
