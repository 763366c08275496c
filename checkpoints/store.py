"""``RedisStore``: LangGraph's ``BaseStore`` on plain Redis (long-term memory across threads).

Layout under ``{prefix}:store``: one JSON string per item (value, times, TTL, vectors),
a sorted set of each namespace's keys in insertion order, and a sorted set of the
namespaces. Search walks the namespaces under a prefix, filters like LangGraph's
``InMemoryStore`` and, with an index config, ranks by cosine similarity of embeddings.
Without one, a query ranks by the share of its words found in the value.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

import redis
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)
from langgraph.store.base.embed import ensure_embeddings, get_text_at_path

from checkpoints.errors import RedisUnavailableError
from checkpoints.keys import DEFAULT_PREFIX, escape, unescape

OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": lambda a, b: a == b, "$ne": lambda a, b: a != b,
    "$gt": lambda a, b: float(a) > float(b), "$gte": lambda a, b: float(a) >= float(b),
    "$lt": lambda a, b: float(a) < float(b), "$lte": lambda a, b: float(a) <= float(b),
}


def matches(value: Any, wanted: Any) -> bool:
    """A filter value against an item value: equality, nested objects, or ``$`` operators."""
    if isinstance(wanted, dict):
        if any(k.startswith("$") for k in wanted):
            return all(OPERATORS[op](value, arg) for op, arg in wanted.items())
        return isinstance(value, dict) and all(matches(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return isinstance(value, list | tuple) and len(value) == len(wanted) and all(
            matches(v, w) for v, w in zip(value, wanted, strict=True))
    return bool(value == wanted)


def ns_match(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    pairs = zip(namespace, path, strict=False) if condition.match_type == "prefix" else \
        zip(reversed(namespace), reversed(path), strict=False)
    return all(p == "*" or n == p for n, p in pairs)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(y * y for y in b))
    return sum(x * y for x, y in zip(a, b, strict=False)) / (na * nb) if na and nb else 0.0


def text_score(query: str, value: dict[str, Any]) -> float:
    """Share of the query's words found in the value's text (no embeddings configured)."""
    words = [w for w in query.lower().split() if w]
    text = json.dumps(value, ensure_ascii=False).lower()
    return sum(w in text for w in words) / len(words) if words else 0.0


class RedisStore(BaseStore):
    """Long-term memory on Redis; ``abatch`` runs ``batch`` in a worker thread."""

    supports_ttl = True

    def __init__(
        self,
        client: redis.Redis,
        *,
        prefix: str = DEFAULT_PREFIX,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
    ) -> None:
        self.redis = client
        self.prefix = f"{prefix}:store"
        self.ttl_config = ttl
        self.index_config = index
        self.embeddings = ensure_embeddings(index["embed"]) if index else None
        self.index_fields = list(index.get("fields") or ["$"]) if index else []

    # --- keys ------------------------------------------------------------------

    def _ns(self, namespace: tuple[str, ...]) -> str:
        return ".".join(escape(label) for label in namespace)

    def _item_key(self, namespace: tuple[str, ...], key: str) -> str:
        return f"{self.prefix}:{{{self._ns(namespace)}}}:item:{escape(key)}"

    def _keys_key(self, namespace: tuple[str, ...]) -> str:
        return f"{self.prefix}:{{{self._ns(namespace)}}}:keys"

    @property
    def _namespaces_key(self) -> str:
        return f"{self.prefix}:namespaces"

    # --- BaseStore -------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        try:
            results: list[Result] = []
            puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
            for op in ops:
                if isinstance(op, GetOp):
                    results.append(self._get(op))
                elif isinstance(op, SearchOp):
                    results.append(self._search(op))
                elif isinstance(op, ListNamespacesOp):
                    results.append(self._list_namespaces(op))
                elif isinstance(op, PutOp):
                    puts[(op.namespace, op.key)] = op  # the last write to a key wins
                    results.append(None)
                else:
                    raise ValueError(f"unknown store operation {type(op).__name__}")
            for op in puts.values():
                self._put(op)
            return results
        except redis.RedisError as exc:
            raise RedisUnavailableError(f"the memory store cannot reach Redis: {exc}") from exc

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    # --- operations ------------------------------------------------------------

    def _load(self, raw: bytes | str | None, namespace: tuple[str, ...], key: str) -> dict[str, Any] | None:
        return None if raw is None else {**json.loads(raw), "namespace": namespace, "key": key}

    def _get(self, op: GetOp) -> Item | None:
        data = self._load(self.redis.get(self._item_key(op.namespace, op.key)), op.namespace, op.key)
        if data is None:
            return None
        refresh = self.ttl_config.get("refresh_on_read", True) if self.ttl_config else True
        if op.refresh_ttl and refresh and data.get("ttl"):
            self.redis.expire(self._item_key(op.namespace, op.key), int(data["ttl"] * 60))
        return self._item(data)

    def _item(self, data: dict[str, Any], score: float | None = None, search: bool = False) -> Item:
        fields = {"namespace": data["namespace"], "key": data["key"], "value": data["value"],
                  "created_at": datetime.fromtimestamp(data["created_at"], UTC),
                  "updated_at": datetime.fromtimestamp(data["updated_at"], UTC)}
        return SearchItem(**fields, score=score) if search else Item(**fields)

    def _put(self, op: PutOp) -> None:
        item_key, keys_key = self._item_key(op.namespace, op.key), self._keys_key(op.namespace)
        ns = self._ns(op.namespace)
        if op.value is None:
            with self.redis.pipeline(transaction=False) as pipe:
                pipe.delete(item_key)
                pipe.zrem(keys_key, escape(op.key))
                pipe.execute()
            if not self.redis.zcard(keys_key):
                self.redis.zrem(self._namespaces_key, ns)
            return
        now = time.time()
        previous = self.redis.get(item_key)
        created = json.loads(previous)["created_at"] if previous else now
        doc = {"value": dict(op.value), "created_at": created, "updated_at": now, "ttl": op.ttl,
               "vectors": self._vectors(op)}
        with self.redis.pipeline(transaction=False) as pipe:
            pipe.set(item_key, json.dumps(doc, ensure_ascii=False),
                     ex=int(op.ttl * 60) if op.ttl else None)
            # Insertion order, kept on update, as LangGraph's InMemoryStore keeps it.
            pipe.zadd(keys_key, {escape(op.key): created}, nx=True)
            pipe.zadd(self._namespaces_key, {ns: now}, nx=True)
            pipe.execute()

    def _vectors(self, op: PutOp) -> dict[str, list[float]]:
        if self.embeddings is None or op.index is False:
            return {}
        paths = self.index_fields if op.index is None else list(op.index)
        texts = [(p, t) for p in paths for t in get_text_at_path(op.value, p)]
        if not texts:
            return {}
        vectors = self.embeddings.embed_documents([t for _, t in texts])
        return {f"{p}#{i}": list(v) for i, ((p, _), v) in enumerate(zip(texts, vectors, strict=True))}

    def _namespaces(self) -> list[tuple[str, ...]]:
        members = self.redis.zrange(self._namespaces_key, 0, -1)
        return [tuple(unescape(part) for part in _text(m).split(".")) for m in members]

    def _items_of(self, namespace: tuple[str, ...], start: int = 0, stop: int = -1) -> list[dict[str, Any]]:
        keys = [unescape(_text(k)) for k in self.redis.zrange(self._keys_key(namespace), start, stop)]
        if not keys:
            return []
        raws = self.redis.mget([self._item_key(namespace, k) for k in keys])
        expired = [k for k, raw in zip(keys, raws, strict=True) if raw is None]
        if expired:  # items gone by TTL: drop them from the index too
            self.redis.zrem(self._keys_key(namespace), *(escape(k) for k in expired))
        return [d for k, raw in zip(keys, raws, strict=True)
                if (d := self._load(raw, namespace, k)) is not None]

    def _page(self, namespaces: list[tuple[str, ...]], offset: int, limit: int) -> list[dict[str, Any]]:
        """Without filter or query, read only the items of the requested page."""
        out: list[dict[str, Any]] = []
        for ns in namespaces:
            if len(out) >= limit:
                break
            size = int(self.redis.zcard(self._keys_key(ns)))
            if offset >= size:
                offset -= size
                continue
            out += self._items_of(ns, offset, offset + (limit - len(out)) - 1)
            offset = 0
        return out

    def _search(self, op: SearchOp) -> list[SearchItem]:
        n = len(op.namespace_prefix)
        if not op.query and not op.filter:
            under = [ns for ns in self._namespaces() if ns[:n] == op.namespace_prefix]
            return [self._item(d, search=True) for d in self._page(under, op.offset, op.limit)]  # type: ignore[misc]  # SearchItem
        candidates = [
            d for ns in self._namespaces() if ns[:n] == op.namespace_prefix
            for d in self._items_of(ns)
            if not op.filter or all(matches(d["value"].get(k), v) for k, v in op.filter.items())
        ]
        if not op.query:
            page = candidates[op.offset: op.offset + op.limit]
            return [self._item(d, search=True) for d in page]  # type: ignore[misc]  # SearchItem
        if self.embeddings is not None:
            query = self.embeddings.embed_query(op.query)
            scored = [(max((cosine(query, v) for v in d["vectors"].values()), default=None), d)
                      for d in candidates]
        else:
            scored = [(text_score(op.query, d["value"]), d) for d in candidates]
            scored = [(s, d) for s, d in scored if s]
        ranked = sorted(scored, key=lambda sd: -1.0 if sd[0] is None else -sd[0])
        return [self._item(d, s, search=True) for s, d in ranked[op.offset: op.offset + op.limit]]  # type: ignore[misc]  # SearchItem

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        found = [ns for ns in self._namespaces()
                 if all(ns_match(c, ns) for c in op.match_conditions or ())]
        if op.max_depth is not None:
            found = list({ns[: op.max_depth] for ns in found})
        return sorted(set(found))[op.offset: op.offset + op.limit]
