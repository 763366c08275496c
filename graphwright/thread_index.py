"""The thread search index: threads by status and metadata without reading every thread.

Layout (all under one hash tag, so intersections are one command even on a cluster):
`by:updated` and `by:created` sorted sets (thread id -> epoch seconds), one set per
API status, one set per scalar metadata pair (`key=<JSON value>`) and, per thread,
the set of metadata sets it is in, so a metadata change leaves the old ones. A search
intersects the order set with the filter sets (weight 0) and reads one page of it.
Non-scalar metadata filters, `values` and `ids` are checked on the candidates.

With encryption on, a metadata set is named by a keyed hash of its pair (`Keys`), so no
user text sits in key names. After a key rotation a search reads the union of a pair's
sets under every key; `reindex` (run by `graphwright rekey`) moves every thread to the
newest key's sets, after which the old key can go.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import redis
from redis.client import Pipeline
from redis.cluster import RedisCluster

from graphwright.aconnect import AsyncScript, batch
from graphwright.checkpoints.direct import Command
from graphwright.checkpoints.keys import Keys
from graphwright.run_status import HTTP_OF_THREAD, HttpThreadStatus
from graphwright_errors import ConfigurationError

if TYPE_CHECKING:  # the `show` and `trace` paths load no LangGraph (tests/cli/test_startup.py)
    from graphwright.checkpoints.saver_base import AsyncClient

ApiStatus = HttpThreadStatus
STATUSES: tuple[ApiStatus, ...] = ("idle", "busy", "interrupted", "error")
API_STATUS = HTTP_OF_THREAD  # the Orchestrator's run statuses as the Agent Server's
Order = Literal["updated", "created"]
LAST_RANK = 2**63 - 1

# Leave the metadata sets the thread was in, join the new ones, remember which.
_REINDEX_META = """
local thread = ARGV[1]
for _, key in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  redis.call('SREM', key, thread)
end
redis.call('DEL', KEYS[1])
for i = 2, #KEYS do
  redis.call('SADD', KEYS[i], thread)
  redis.call('SADD', KEYS[1], KEYS[i])
end
return #KEYS - 1
"""

_AREINDEX_META = AsyncScript(_REINDEX_META)


def scalar_pairs(metadata: Mapping[str, Any]) -> dict[str, str]:
    """The top-level pairs the index keeps: key -> the value as canonical JSON."""
    return {
        k: json.dumps(v, sort_keys=True)
        for k, v in metadata.items()
        if v is None or isinstance(v, str | int | float | bool)
    }


def contains(superset: Any, subset: Mapping[str, Any]) -> bool:
    """JSON containment (Postgres `@>` on objects), the reference's metadata match."""
    if not isinstance(superset, Mapping):
        return False
    for key, value in subset.items():
        if key not in superset:
            return False
        if isinstance(value, Mapping) and isinstance(superset[key], Mapping):
            if not contains(superset[key], value):
                return False
        elif superset[key] != value:
            return False
    return True


def matches(metadata: Mapping[str, Any], filters: Mapping[str, Any]) -> bool:
    """An auth handler's filter (the Agent Server's language).

    A plain value or `$eq`, `$contains` (a list holding every item), `$or` of filters; all ANDed.
    """
    for key, wanted in filters.items():
        if key == "$or":
            if not isinstance(wanted, list) or not all(isinstance(g, Mapping) for g in wanted):
                raise ConfigurationError("an auth filter's $or must be a list of filters")
            if not any(matches(metadata, group) for group in wanted):
                return False
            continue
        have = metadata.get(key)
        if not isinstance(wanted, Mapping):
            if have != wanted:
                return False
        elif not all(_holds(op, have, arg) for op, arg in wanted.items()):
            return False
    return True


def _holds(op: str, have: Any, arg: Any) -> bool:
    """One operator of a key's filter, on the key's value."""
    if op == "$eq":
        return bool(have == arg)
    if op == "$contains":
        items = arg if isinstance(arg, list) else [arg]
        return isinstance(have, list) and all(a in have for a in items)
    raise ConfigurationError(
        f"auth filter operator {op!r} is not supported; use a plain value, $eq, $contains or $or"
    )


def equalities(filters: Mapping[str, Any]) -> dict[str, Any]:
    """The part of an auth filter that is plain equality (what the index sets answer)."""
    plain = {
        k: (v["$eq"] if isinstance(v, Mapping) and set(v) == {"$eq"} else v)
        for k, v in filters.items()
        if not k.startswith("$")
    }
    return {k: v for k, v in plain.items() if not isinstance(v, Mapping | list)}


@dataclass(frozen=True, kw_only=True)
class Query:
    """What a thread search asks for; the index answers the status and scalar metadata.

    `filters` is what the caller may see (an auth handler's filter): its equalities join
    the index query and the rest is checked on the candidates, before any page is cut.
    """

    status: ApiStatus | None = None
    metadata: Mapping[str, Any] | None = None
    order: Order = "updated"
    descending: bool = True
    filters: Mapping[str, Any] | None = None

    def indexed(self) -> dict[str, str]:
        asked = scalar_pairs(self.metadata or {})
        allowed = scalar_pairs(equalities(self.filters or {}))
        return {**allowed, **asked}  # a key both name with two values: needs_check says so

    def needs_check(self) -> bool:
        """Whether some metadata filter is not answered by the index alone."""
        asked = scalar_pairs(self.metadata or {})
        allowed = scalar_pairs(equalities(self.filters or {}))
        clash = any(asked.get(k, v) != v for k, v in allowed.items())
        return (
            clash
            or len(asked) != len(self.metadata or {})
            or len(allowed) != len(self.filters or {})
        )

    def allows(self, metadata: Mapping[str, Any]) -> bool:
        return not self.filters or matches(metadata, self.filters)


class ThreadIndex:
    """Reads and writes the index; writers pass their own pipeline so it joins their write."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self.client = client
        self.keys = keys
        self._script = client.register_script(_REINDEX_META)

    def _reindex(self, keys: list[str], args: list[str], client: Pipeline | redis.Redis) -> None:
        """In a pipeline the script goes by its body (`EVAL`).

        A registered script there costs a `SCRIPT EXISTS` round trip on every execute.
        """
        if isinstance(client, Pipeline):
            client.eval(_REINDEX_META, len(keys), *keys, *args)
        else:
            self._script(keys=keys, args=args, client=client)

    # --- writing ---------------------------------------------------------------

    def on_write(
        self, pipe: Pipeline, thread_id: str, fields: Mapping[str, str], now: float | None = None
    ) -> None:
        """Index one write of the thread's meta hash (`ThreadMeta.write`)."""
        now = time.time() if now is None else now
        k = self.keys
        pipe.zadd(k.threads_by("updated"), {thread_id: now})
        created = float(fields["created_at"]) if fields.get("created_at") else now
        pipe.zadd(k.threads_by("created"), {thread_id: created}, nx=True)
        if "status" in fields:
            self.set_status(pipe, thread_id, API_STATUS.get(fields["status"], "idle"))
        elif "created_at" in fields:
            self.set_status(pipe, thread_id, "idle")
        if "metadata" in fields:
            self.set_metadata(pipe, thread_id, json.loads(fields["metadata"] or "{}"))

    def set_status(self, pipe: Pipeline, thread_id: str, status: ApiStatus) -> None:
        for other in STATUSES:
            if other != status:
                pipe.srem(self.keys.threads_with_status(other), thread_id)
        pipe.sadd(self.keys.threads_with_status(status), thread_id)

    def set_metadata(
        self, pipe: Pipeline | redis.Redis, thread_id: str, metadata: Mapping[str, Any]
    ) -> None:
        sets = [
            self.keys.threads_with_meta(key, value) for key, value in scalar_pairs(metadata).items()
        ]
        self._reindex(
            keys=[self.keys.thread_memberships(thread_id), *sets], args=[thread_id], client=pipe
        )

    def forget(self, thread_ids: Iterable[str]) -> None:
        """Remove threads from every index set (deleted, or expired by their TTL)."""
        ids = list(thread_ids)
        if not ids:
            return
        if isinstance(self.client, RedisCluster):  # a cluster pipeline cannot run scripts;
            self._forget(self.client, ids)  # each step is idempotent on its own
            return
        with self.client.pipeline(transaction=True) as pipe:
            self._forget(pipe, ids)
            pipe.execute()

    def _forget(self, target: Pipeline | redis.Redis, ids: list[str]) -> None:
        k = self.keys
        for thread_id in ids:
            self._reindex(keys=[k.thread_memberships(thread_id)], args=[thread_id], client=target)
        for order in ("updated", "created", "expires"):
            target.zrem(k.threads_by(order), *ids)
        for status in STATUSES:
            target.srem(k.threads_with_status(status), *ids)

    async def aforget(self, client: AsyncClient, thread_ids: Iterable[str]) -> None:
        """`forget` by a coroutine, on `client` (the run loop's).

        One round trip; a cluster's steps go one by one, each idempotent.
        """
        ids = list(thread_ids)
        if not ids:
            return
        k = self.keys
        commands: list[Command] = [
            _AREINDEX_META.command([k.thread_memberships(t)], [t]) for t in ids
        ]
        commands += [("ZREM", k.threads_by(o), *ids) for o in ("updated", "created", "expires")]
        commands += [("SREM", k.threads_with_status(s), *ids) for s in STATUSES]
        await batch(client, commands)

    def set_expiry(self, thread_id: str, at: float | None) -> None:
        """Note when a thread's TTL deletes it (`None`: never), so the index can drop it."""
        if at is None:
            self.client.zrem(self.keys.threads_by("expires"), thread_id)
        else:
            self.client.zadd(self.keys.threads_by("expires"), {thread_id: at})

    def drop_expired(self, now: float | None = None) -> list[str]:
        """Forget the threads whose TTL has passed; returns their ids."""
        now = time.time() if now is None else now
        raw: list[bytes] = self.client.zrangebyscore(self.keys.threads_by("expires"), "-inf", now)  # type: ignore[assignment]  # bytes client
        gone = [r.decode() for r in raw]
        self.forget(gone)
        return gone

    def reindex(self, metadata_of: Callable[[str], Mapping[str, Any]]) -> int:
        """Put every indexed thread in the metadata sets of the newest key; returns how many."""
        raw: list[bytes] = self.client.zrange(self.keys.threads_by("created"), 0, -1)  # type: ignore[assignment]  # bytes client
        for thread_id in (r.decode() for r in raw):
            self.set_metadata(self.client, thread_id, metadata_of(thread_id))
        return len(raw)

    # --- reading ---------------------------------------------------------------

    def _sources(self, query: Query, token: str) -> tuple[dict[str, float], dict[str, list[str]]]:
        """The sets to intersect, and the unions to build first (a pair under several keys)."""
        k = self.keys
        sources = {k.threads_by(query.order): 1.0}
        unions: dict[str, list[str]] = {}
        if query.status:
            sources[k.threads_with_status(query.status)] = 0.0
        for i, (key, value) in enumerate(query.indexed().items()):
            names = k.threads_with_meta_any(key, value)
            if len(names) > 1:
                union = k.thread_search_scratch(f"{token}:{i}")
                unions[union] = names
                names = [union]
            sources[names[0]] = 0.0
        return sources, unions

    def _intersect(self, query: Query, then: Callable[[Pipeline, str], object]) -> list[Any]:
        """Intersect the query's sets into a scratch set, run `then` on it, drop the scratch."""
        token = uuid.uuid4().hex
        sources, unions = self._sources(query, token)
        scratch = self.keys.thread_search_scratch(token)
        with self.client.pipeline(transaction=True) as pipe:
            for union, names in unions.items():
                pipe.sunionstore(union, names)
            pipe.zinterstore(scratch, sources, aggregate="SUM")
            then(pipe, scratch)
            pipe.delete(scratch, *unions)
            found: list[Any] = pipe.execute()
        return found[len(unions) :]

    def page(self, query: Query, offset: int, limit: int) -> list[str]:
        """Ids of the candidates `offset .. offset+limit-1` in the query's order.

        `limit < 0` reads every candidate.
        """
        if offset > LAST_RANK:
            return []
        end = -1 if limit < 0 else min(offset + limit - 1, LAST_RANK)  # Redis ranks are int64
        if not query.status and not query.indexed():
            only = self.keys.threads_by(query.order)
            raw: list[bytes] = self.client.zrange(only, offset, end, desc=query.descending)  # type: ignore[assignment]  # bytes client
            return [r.decode() for r in raw]
        _, raw, _ = self._intersect(
            query, lambda pipe, scratch: pipe.zrange(scratch, offset, end, desc=query.descending)
        )
        return [r.decode() for r in raw]

    def count(self, query: Query) -> int:
        """How many threads the index part of the query matches."""
        if not query.status and not query.indexed():
            return int(self.client.zcard(self.keys.threads_by(query.order)))
        total, _ = self._intersect(query, lambda pipe, scratch: None)
        return int(total)

    def status_of(self, thread_id: str) -> ApiStatus | None:
        """The status the index holds for a thread (to repair it when the live one differs)."""
        with self.client.pipeline(transaction=False) as pipe:
            for status in STATUSES:
                pipe.sismember(self.keys.threads_with_status(status), thread_id)
            found = pipe.execute()
        return next((s for s, hit in zip(STATUSES, found, strict=True) if hit), None)
