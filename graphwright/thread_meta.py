"""A thread's meta hash: its graph, status, times, the run bookkeeping and the user's metadata.

One hash per thread, on the thread's own cluster slot; the user's text in it (`metadata`,
`remember`) is sealed when encryption is on. Every write also refreshes the threads
index and the HTTP service's search index, each on its own slot.
"""

from __future__ import annotations

import json
import time
from typing import Any

import redis
from redis.cluster import RedisCluster

from graphwright import run_status
from graphwright.checkpoints.errors import RedisUnavailableError
from graphwright.checkpoints.fenced import fenced_hset, hset_new
from graphwright.checkpoints.keys import Keys, escape
from graphwright.checkpoints.sealed import Sealer
from graphwright.locking import held
from graphwright.thread_index import ThreadIndex
from graphwright_errors import NotFoundError

SEALED_META = frozenset({"metadata", "remember", "summary"})  # thread fields with the user's text


class ThreadMeta:
    """Reads and writes the meta hash of any thread."""

    def __init__(self, client: redis.Redis, keys: Keys, sealer: Sealer, index: ThreadIndex) -> None:
        self.client, self.keys, self.sealer, self.index = client, keys, sealer, index

    def read(self, thread_id: str) -> dict[str, str]:
        """The stored fields; empty for an unknown thread."""
        try:
            raw = self.client.hgetall(self.keys.meta(thread_id))
        except redis.RedisError as exc:
            raise unavailable(exc) from exc
        return self.decode(thread_id, raw)

    def decode(self, thread_id: str, raw: Any) -> dict[str, str]:
        """An HGETALL reply of the thread's meta, its sealed fields opened."""
        key = self.keys.meta(thread_id)
        return {
            _text(k): self.sealer.open_text(v, key, k) if _text(k) in SEALED_META else _text(v)
            for k, v in raw.items()
        }

    def known(self, thread_id: str) -> dict[str, str]:
        """`read` of a thread that has a graph, or NotFoundError."""
        meta = self.read(thread_id)
        if not meta.get("graph"):
            raise NotFoundError(f"no thread {thread_id!r}; `threads` lists the known ones")
        return meta

    def write(self, thread_id: str, /, fence: int | None = None, **fields: str) -> None:
        """Set `fields` (and `updated_at`), and list the thread in both indexes.

        With a run's `fence`, a run that lost the thread writes nothing (LockLostError).
        """
        self._write(thread_id, fields, fence, new=False)

    def create(self, thread_id: str, /, **fields: str) -> bool:
        """`write` of a thread that does not exist yet, checked and written in one step.

        False (nothing written) when the thread exists, as for the loser of two at once.
        """
        return self._write(thread_id, fields, None, new=True)

    def _write(
        self, thread_id: str, fields: dict[str, str], fence: int | None, *, new: bool
    ) -> bool:
        key = self.keys.meta(thread_id)
        try:
            now = time.time()
            mapping = {
                k: self.sealer.seal_text(v, key, k) if k in SEALED_META else v
                for k, v in {**fields, "updated_at": str(now)}.items()
            }
            if new:
                if not hset_new(self.client, self.keys, thread_id, key, mapping):
                    return False
            else:
                fenced_hset(self.client, self.keys, thread_id, key, mapping, fence, registry=True)
            # The threads index the saver keeps, so threads with no checkpoint yet are listed.
            # On a cluster it lives on another slot, so it is written on its own (idempotent).
            listed = {escape(thread_id): int(now * 1000)}
            if isinstance(self.client, RedisCluster):  # a cluster pipeline cannot run scripts
                self.client.zadd(self.keys.threads(), listed)
                self.index.on_write(self.client, thread_id, fields, now)
            else:
                with self.client.pipeline(
                    transaction=True
                ) as pipe:  # the HTTP search index: its own slot
                    pipe.zadd(self.keys.threads(), listed)
                    self.index.on_write(pipe, thread_id, fields, now)
                    pipe.execute()
        except redis.RedisError as exc:
            raise unavailable(exc) from exc
        return True

    def refresh_ttl(self, thread_id: str) -> int | None:
        """Restart the thread's own TTL (`threads.create(ttl=...)`) on every key it has now.

        Its length in seconds, or None for a thread without one.
        """
        ttl = self.read(thread_id).get("ttl_s")
        if not ttl:
            return None
        seconds = int(float(ttl))
        registry = self.keys.registry(thread_id)
        members = [
            m.decode() if isinstance(m, bytes) else m for m in self.client.smembers(registry)
        ]
        with self.client.pipeline(transaction=True) as pipe:
            for key in [*members, registry, self.keys.meta(thread_id)]:
                pipe.expire(key, seconds)
            pipe.execute()
        self.index.set_expiry(thread_id, time.time() + seconds)
        return seconds

    def status_of(self, meta: dict[str, str]) -> Any:
        """The thread's status; a run whose process died reads as failed."""
        recorded = meta.get("status")
        alive = recorded != "running" or held(self.client, self.keys, meta.get("thread_id", ""))
        return run_status.as_read(recorded, alive)

    def status(self, meta: dict[str, str], snapshot: Any) -> Any:
        """Like `status_of`, but a run whose process died after its last step reads as that step.

        It reads as how that step ended, not as failed.
        """
        return self.settled(
            meta,
            next=list(snapshot.next),
            interrupted=bool(snapshot.interrupts),
            stop_reason=(snapshot.values or {}).get("stop_reason"),
        )

    def settled(
        self, meta: dict[str, str], *, next: list[str], interrupted: bool, stop_reason: Any
    ) -> Any:
        """`status` from the parts of the snapshot it reads (a recorded summary has them)."""
        recorded = meta.get("status")
        alive = recorded != "running" or held(self.client, self.keys, meta.get("thread_id", ""))
        return run_status.settled(
            recorded, alive, next=next, interrupted=interrupted, stop_reason=stop_reason
        )

    def metadata_of(self, thread_ids: list[str]) -> list[dict[str, Any] | None]:
        """Each thread's user metadata (None: no such thread).

        So a search can narrow many candidates on metadata before it loads any. Plain metadata is
        read in one round trip; sealed metadata (encryption on) goes through `read`, which opens it.
        """
        if self.sealer.on:
            return [
                json.loads(m.get("metadata") or "{}") if (m := self.read(t)) else None
                for t in thread_ids
            ]
        try:
            with self.client.pipeline(transaction=False) as pipe:
                for thread_id in thread_ids:
                    pipe.hmget(self.keys.meta(thread_id), ["metadata", "updated_at"])
                found: list[list[bytes | None]] = pipe.execute()
        except redis.RedisError as exc:
            raise unavailable(exc) from exc
        return [
            None if raw is None and updated is None else json.loads(_text(raw or b"{}"))
            for raw, updated in found
        ]


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def unavailable(exc: Exception) -> RedisUnavailableError:
    """The storage error for a redis-py error met while reading or writing thread records."""
    return RedisUnavailableError(f"Redis is not reachable ({exc})")
