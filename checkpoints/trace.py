"""The trace of a thread: one Redis stream of redacted events, appended as steps happen."""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections import deque
from typing import Any

import redis

from graphwright.checkpoints.errors import LockLostError, RedisUnavailableError
from graphwright.checkpoints.keys import Keys
from graphwright.checkpoints.redact import redact
from graphwright.checkpoints.sealed import Sealer

log = logging.getLogger(__name__)

MAX_EVENTS = 10_000  # per thread; older events are trimmed (approximately) beyond this


# KEYS: events, fence, registry, ids, older ids. ARGV: fence ('' = none), event JSON,
# max events, ttl ('' = none), event id. The event id makes a replayed write (its reply
# was lost, the client sent it again) return the entry the first one added.
_XADD = """
if ARGV[1] ~= '' and redis.call('GET', KEYS[2]) ~= ARGV[1] then return false end
local seen = redis.call('HGET', KEYS[4], ARGV[5]) or redis.call('HGET', KEYS[5], ARGV[5])
if seen then return seen end
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[3], '*', 'e', ARGV[2])
redis.call('HSET', KEYS[4], ARGV[5], id)
if redis.call('HLEN', KEYS[4]) >= tonumber(ARGV[3]) then redis.call('RENAME', KEYS[4], KEYS[5]) end
redis.call('SADD', KEYS[3], KEYS[1], KEYS[4], KEYS[5])
if ARGV[4] ~= '' then
  for i = 1, 5 do if i ~= 2 and i ~= 3 then redis.call('EXPIRE', KEYS[i], ARGV[4]) end end
end
return id
"""
BUFFERED = 1_000  # events kept in memory while Redis is unreachable, per writer


class TraceWriter:
    """Appends and reads trace events; every event is redacted before it leaves the process.

    A trace write never fails the step that emits it: while Redis is unreachable events
    wait in memory (logged loudly) and are written before the next one. With a fencing
    token, an event from a run that lost its thread lock is refused with LockLostError.
    """

    def __init__(
        self,
        client: redis.Redis,
        keys: Keys,
        *,
        ttl_s: int | None = None,
        sealer: Sealer | None = None,
    ) -> None:
        self.redis = client
        self.sealer = sealer or keys.sealer  # events hold tool arguments and results
        self.keys = keys
        self.ttl_s = ttl_s
        self._waiting: deque[tuple[str, bytes | str, int | None, str]] = deque(maxlen=BUFFERED)
        self._xadd = client.register_script(_XADD)  # EVALSHA: the script is sent once

    def encode(self, thread_id: str, kind: str, fields: dict[str, Any]) -> bytes | str:
        """One event as it is stored: redacted, JSON, sealed when encryption is on."""
        event = redact({"kind": kind, "ts": time.time(), **fields})
        return self.sealer.seal_text(
            json.dumps(event, ensure_ascii=False, default=str), self.keys.events(thread_id), "e"
        )

    def emit(self, thread_id: str, kind: str, *, fence: int | None = None, **fields: Any) -> str:
        """Append one redacted event; returns its stream entry id ("" while it waits in memory).

        No lock: each waiting event is taken off the buffer by one writer (`popleft`) and
        put back at its head if Redis is still away; its event id keeps a replay single.
        """
        data = self.encode(thread_id, kind, fields)
        event_id = uuid.uuid4().hex
        try:
            self._flush()
            return self._append(thread_id, data, fence, event_id)
        except redis.RedisError as exc:
            self._waiting.append((thread_id, data, fence, event_id))
            log.error(
                "trace event %s of thread %s not written yet (%s); %d event(s) wait in memory",
                kind,
                thread_id,
                exc,
                len(self._waiting),
            )
            return ""

    def _flush(self) -> None:
        while True:
            try:
                waiting = self._waiting.popleft()
            except IndexError:
                return
            try:
                self._append(*waiting)
            except LockLostError:  # its run lost the thread meanwhile: not its to add
                log.error(
                    "dropped a trace event of thread %s: its run no longer holds the thread",
                    waiting[0],
                )
            except redis.RedisError:
                self._waiting.appendleft(waiting)
                raise

    def _append(self, thread_id: str, data: bytes | str, fence: int | None, event_id: str) -> str:
        keys = (
            self.keys.events(thread_id),
            self.keys.fence(thread_id),
            self.keys.registry(thread_id),
            *self.keys.event_ids(thread_id),
        )
        entry_id = self._xadd(
            keys=keys,
            args=[
                "" if fence is None else str(fence),
                data,
                MAX_EVENTS,
                self.ttl_s or "",
                event_id,
            ],
            client=self.redis,
        )
        if entry_id is None:
            raise LockLostError(
                f"thread {thread_id!r} is held by a newer run; its trace "
                "refuses this process's events"
            )
        return entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)

    def read(self, thread_id: str, since: str = "-") -> list[dict[str, Any]]:
        """The thread's events from entry `since` on (all by default), oldest first."""
        try:
            entries: list[tuple[bytes, dict[bytes, bytes]]] = self.redis.xrange(  # type: ignore[assignment]  # redis-py types bytes|str
                self.keys.events(thread_id), min=since
            )
        except redis.RedisError as exc:
            raise RedisUnavailableError(
                f"cannot read the trace of thread {thread_id!r}: {exc}"
            ) from exc
        return self.decode(thread_id, entries)

    def decode(
        self, thread_id: str, entries: list[tuple[bytes, dict[bytes, bytes]]]
    ) -> list[dict[str, Any]]:
        """Stream entries (an XRANGE reply) as events, oldest first."""
        out = []
        for entry_id, data in entries:
            event = json.loads(self.sealer.open(data[b"e"], self.keys.events(thread_id), "e"))
            event["id"] = entry_id.decode()
            out.append(event)
        return out
