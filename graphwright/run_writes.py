"""The storage of a run's record writes on the run loop: one round trip each.

`run_meta` names what a run writes (its start: running, the `run_start` event, where its
usage counts from; its end: status, summary, the lock given back); this module writes the
fields it is given, naming none, as `ThreadMeta.write` does for blocking callers. Each
write is one script on the thread's slot, refused as a whole when the run's fence is stale,
that also keeps the thread search index (`ThreadIndex`) when the server is a single node; on
a cluster the index lives on another slot and is written after the script, only if it wrote.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import redis
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster

from graphwright.aconnect import AsyncScript, batch
from graphwright.checkpoints.direct import Command
from graphwright.checkpoints.errors import LockLostError
from graphwright.checkpoints.head import Head
from graphwright.checkpoints.keys import Keys, escape
from graphwright.checkpoints.saver_base import AsyncClient
from graphwright.checkpoints.trace import MAX_EVENTS, TraceWriter
from graphwright.locking import ThreadLock
from graphwright.thread_index import API_STATUS, STATUSES
from graphwright.thread_meta import SEALED_META, ThreadMeta, unavailable

# KEYS: meta, fence, registry, events, event ids, older event ids, lock,
#       [threads, by:updated, by:created, status sets (STATUSES order)].
# ARGV: fence ('' = none; 'owner:<id>' = the lock's holder, sent with its acquisition),
#       trace ttl ('' = none), max events, event id ('' = no event),
#       event, the meta field that records the event's id ('' = none), lock value to
#       release ('' = none),
#       now ms, now s, escaped thread id, thread id, status set to join ('' = none),
#       the one status set the thread is in ('' = unknown: leave every other), field, value...
# A current fence proves the lock is ours or gone: whoever sets it moves the fence on in
# the same script (`locking`), so a fenced release deletes it without reading it. The meta
# hash and the registry live and expire together: only a meta hash this write creates may
# be missing from it.
_WRITE = """
if string.sub(ARGV[1], 1, 6) == 'owner:' then
  local cur = redis.call('GET', KEYS[7])
  local ok, held = pcall(cjson.decode, cur or '')
  if not ok or type(held) ~= 'table' or held['id'] ~= string.sub(ARGV[1], 7) then return false end
elseif ARGV[1] ~= '' and redis.call('GET', KEYS[2]) ~= ARGV[1] then return false end
local fields = {}
for i = 14, #ARGV do fields[#fields + 1] = ARGV[i] end
local id = ''
if ARGV[4] ~= '' then
  id = redis.call('HGET', KEYS[5], ARGV[4]) or redis.call('HGET', KEYS[6], ARGV[4])
  if not id then
    id = redis.call('XADD', KEYS[4], 'MAXLEN', '~', ARGV[3], '*', 'e', ARGV[5])
    redis.call('HSET', KEYS[5], ARGV[4], id)
    if redis.call('HLEN', KEYS[5]) >= tonumber(ARGV[3]) then
      redis.call('RENAME', KEYS[5], KEYS[6])
    end
    if ARGV[2] ~= '' then
      for i = 4, 6 do redis.call('EXPIRE', KEYS[i], ARGV[2]) end
    end
  end
  redis.call('SADD', KEYS[3], KEYS[1], KEYS[4], KEYS[5], KEYS[6])
  if ARGV[6] ~= '' then fields[#fields + 1] = ARGV[6]; fields[#fields + 1] = id end
  redis.call('HSET', KEYS[1], unpack(fields))
elseif redis.call('HSET', KEYS[1], unpack(fields)) * 2 == #fields then
  redis.call('SADD', KEYS[3], KEYS[1])
end
if #KEYS > 7 then
  redis.call('ZADD', KEYS[8], ARGV[8], ARGV[10])
  redis.call('ZADD', KEYS[9], ARGV[9], ARGV[11])
  redis.call('ZADD', KEYS[10], 'NX', ARGV[9], ARGV[11])
  if ARGV[12] ~= '' then
    for i = 11, #KEYS do
      if KEYS[i] == ARGV[12] then redis.call('SADD', KEYS[i], ARGV[11])
      elseif ARGV[13] == '' or KEYS[i] == ARGV[13] then redis.call('SREM', KEYS[i], ARGV[11]) end
    end
  end
end
if ARGV[7] ~= '' then
  if ARGV[1] ~= '' then redis.call('DEL', KEYS[7])
  elseif redis.call('GET', KEYS[7]) == ARGV[7] then redis.call('DEL', KEYS[7]) end
end
return id
"""

# KEYS: checkpoints, write index. ARGV: root namespace prefix (escaped '' and NUL).
_HEAD = """
local root = ARGV[1]
local newest = redis.call('ZREVRANGEBYLEX', KEYS[1], '(' .. string.sub(root, 1, -2) .. '\\1',
  '[' .. root, 'LIMIT', 0, 1)
if #newest == 0 then return false end
local rest = string.sub(newest[1], #root + 1)
local cut = string.find(rest, '\\0', 1, true)
local id = cut and string.sub(rest, 1, cut - 1) or rest
local prefix = root .. id .. '\\0'
local n = redis.call('ZLEXCOUNT', KEYS[2], '[' .. prefix, '(' .. string.sub(prefix, 1, -2) .. '\\1')
return {id, n}
"""
_AWRITE, _AHEAD = AsyncScript(_WRITE), AsyncScript(_HEAD)
_ROOT = escape("").encode() + b"\x00"  # codec.ns_prefix("")


@dataclass(frozen=True, kw_only=True)
class Event:
    """A trace event the write adds; `id_field`: the meta field that records its entry id."""

    kind: str
    fields: dict[str, Any]
    id_field: str = ""


class RunWrites:
    """The start and end writes of runs, on the asyncio client of the run loop."""

    def __init__(
        self, client: AsyncClient, keys: Keys, tracer: TraceWriter, meta: ThreadMeta
    ) -> None:
        self.client, self.keys, self.tracer, self.meta = client, keys, tracer, meta
        self.cluster = isinstance(client, AsyncRedisCluster)

    async def write(
        self,
        thread_id: str,
        fence: int | None,
        fields: Mapping[str, str],
        *,
        event: Event | None = None,
        release: ThreadLock | None = None,
        was: str | None = None,
        reads: Sequence[Command] = (),
    ) -> tuple[str, list[Any]]:
        """Set `fields` of the thread's meta (and `updated_at`), add `event`, give `release` back.

        `was`: the thread's status before this write, when the caller knows it under its
        fence (read under its lock, or its own start wrote it): a new status then leaves
        that one status set only. `reads` (commands) go in the same round trip, before it.
        Returns the event's entry id ("" without one) and the replies to `reads`.

        Raises:
            LockLostError: a newer run holds the thread; nothing was written.
        """
        now = time.time()
        token = "" if fence is None else str(fence)
        command = self._command(thread_id, token, fields, now, event, release, was)
        try:
            *replies, got = await batch(self.client, [*reads, command])
        except redis.RedisError as exc:
            raise unavailable(exc) from exc
        entry = self.written(thread_id, got)
        if release is not None:
            release.released = True
        if self.cluster:
            try:
                await self._index(thread_id, now, fields.get("status"), was)
            except redis.RedisError as exc:
                raise unavailable(exc) from exc
        return entry, replies

    def owned(
        self, thread_id: str, owner_id: str, fields: Mapping[str, str], *, event: Event
    ) -> Command:
        """`write`'s command for a run that sends it with its lock's acquisition (a new thread).

        Checked against the lock's holder (`owner_id`) rather than a fence not known yet; its
        reply goes to `written`. A single server only: a cluster writes the index after.
        """
        if self.cluster:
            raise RuntimeError("a cluster's record writes are sent after the lock is taken")
        return self._command(thread_id, f"owner:{owner_id}", fields, time.time(), event, None, None)

    def written(self, thread_id: str, reply: Any) -> str:
        """The entry id a write's reply names ("" without an event).

        Raises:
            LockLostError: the write was refused: a newer run holds the thread.
        """
        if reply is None:
            raise LockLostError(
                f"thread {thread_id!r} is held by a newer run; its meta was not written"
            )
        return reply.decode() if isinstance(reply, bytes) else str(reply)

    def _command(
        self,
        thread_id: str,
        token: str,
        fields: Mapping[str, str],
        now: float,
        event: Event | None,
        release: ThreadLock | None,
        was: str | None,
    ) -> Command:
        k = self.keys
        meta_key = k.meta(thread_id)
        sealer = k.sealer
        pairs = [
            x
            for name, value in {**fields, "updated_at": str(now)}.items()
            for x in (
                name,
                sealer.seal_text(value, meta_key, name) if name in SEALED_META else value,
            )
        ]
        status, left = self._statuses(fields.get("status"), was)
        names = [
            meta_key,
            k.fence(thread_id),
            k.registry(thread_id),
            k.events(thread_id),
            *k.event_ids(thread_id),
            k.lock(thread_id),
        ]
        args: list[Any] = [
            token,
            self.tracer.ttl_s or "",
            MAX_EVENTS,
            uuid.uuid4().hex if event else "",
            self.tracer.encode(thread_id, event.kind, event.fields) if event else "",
            event.id_field if event else "",
            release.value if release is not None else "",
            int(now * 1000),
            now,
            escape(thread_id),
            thread_id,
            status,
            left,
            *pairs,
        ]
        keys = names if self.cluster else [*names, *self._index_keys()]
        return _AWRITE.command(keys, args)

    def _statuses(self, status: str | None, was: str | None) -> tuple[str, str]:
        """The status set a write joins ('' = none) and the one it leaves ('' = every other)."""
        k = self.keys
        joins = k.threads_with_status(API_STATUS.get(status, "idle")) if status else ""
        leaves = k.threads_with_status(API_STATUS.get(was, "idle")) if joins and was else ""
        return joins, leaves

    def _index_keys(self) -> list[str]:
        k = self.keys
        return [
            k.threads(),
            k.threads_by("updated"),
            k.threads_by("created"),
            *(k.threads_with_status(s) for s in STATUSES),
        ]

    async def event(
        self, thread_id: str, fence: int | None, kind: str, fields: dict[str, Any]
    ) -> str:
        """Add one trace event (redacted, sealed, fenced like `write`); returns its entry id."""
        entry, _ = await self.write(thread_id, fence, {}, event=Event(kind=kind, fields=fields))
        return entry

    async def _index(self, thread_id: str, now: float, status: str | None, was: str | None) -> None:
        """The index writes of `_WRITE` on a cluster: each idempotent, on its own slot."""
        index = self._index_keys()
        joins, _ = self._statuses(status, was)
        pipe = self.client.pipeline(transaction=False)
        pipe.zadd(index[0], {escape(thread_id): int(now * 1000)})
        pipe.zadd(index[1], {thread_id: now})
        pipe.zadd(index[2], {thread_id: now}, nx=True)
        if joins:
            for name in index[3:]:
                (pipe.sadd if name == joins else pipe.srem)(name, thread_id)
        await pipe.execute()

    async def tail(self, thread_id: str, since: str) -> tuple[list[dict[str, Any]], Head | None]:
        """The thread's trace events from `since` on and its head, in one round trip."""
        commands = [("XRANGE", self.keys.events(thread_id), since, "+"), self._head_of(thread_id)]
        entries, head = await self._batch(commands)
        return self.tracer.decode(thread_id, entries), head_from(head)

    async def head(self, thread_id: str) -> Head | None:
        """The thread's head (its newest root checkpoint and how many writes it has)."""
        (head,) = await self._batch([self._head_of(thread_id)])
        return head_from(head)

    def _head_of(self, thread_id: str) -> Command:
        k = self.keys
        return _AHEAD.command((k.checkpoints(thread_id), k.write_index(thread_id)), (_ROOT,))

    async def _batch(self, commands: Sequence[Command]) -> list[Any]:
        try:
            return await batch(self.client, commands)
        except redis.RedisError as exc:
            raise unavailable(exc) from exc

    def read_events(self, thread_id: str, since: str) -> Command:
        """The command that reads the thread's trace from `since` on (to send with a write)."""
        return ("XRANGE", self.keys.events(thread_id), since, "+")

    def events_of(self, thread_id: str, reply: Any) -> list[dict[str, Any]]:
        """The events from the reply to `read_events`."""
        return self.tracer.decode(thread_id, reply)

    def read_meta(self, thread_id: str) -> Command:
        """The command that reads the thread's meta (to send with another, e.g. the lock's)."""
        return ("HGETALL", self.keys.meta(thread_id))

    def meta_of(self, thread_id: str, reply: Any) -> dict[str, str]:
        """The meta from the reply to `read_meta`."""
        return self.meta.decode(thread_id, reply)

    async def read(self, thread_id: str) -> dict[str, str]:
        """`ThreadMeta.read` on the run loop."""
        try:
            raw = await self.client.hgetall(self.keys.meta(thread_id))
        except redis.RedisError as exc:
            raise unavailable(exc) from exc
        return self.meta.decode(thread_id, raw)

    async def refresh_ttl(self, thread_id: str, seconds: int) -> None:
        """`ThreadMeta.refresh_ttl` of a thread whose meta says its TTL (`seconds`)."""
        k = self.keys
        registry = k.registry(thread_id)
        try:
            members = await self.client.smembers(registry)
            pipe = self.client.pipeline(transaction=not self.cluster)
            for key in [*members, registry, k.meta(thread_id)]:
                pipe.expire(key, seconds)
            await pipe.execute()
            expires = {thread_id: time.time() + seconds}
            await self.client.zadd(k.threads_by("expires"), expires)
        except redis.RedisError as exc:
            raise unavailable(exc) from exc


def head_from(reply: Any) -> Head | None:
    """The `_HEAD` script's reply as a `Head` (None: the thread has no checkpoint)."""
    if not reply:
        return None
    checkpoint_id, writes = reply
    if isinstance(checkpoint_id, bytes):
        checkpoint_id = checkpoint_id.decode()
    return Head(checkpoint_id=checkpoint_id, writes=int(writes))
