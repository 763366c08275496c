"""The memory store's operations as I/O-free generators.

Shared by `RedisStore` and `AsyncRedisStore`: each yields a pipeline of Redis commands (or texts to
embed) and receives the replies, so the two stores differ only in the driver.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from langgraph.store.base import (
    GetOp,
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
from langgraph.store.base.embed import get_text_at_path

from graphwright.checkpoints.keys import escape, unescape
from graphwright.checkpoints.sealed import Sealer

T = TypeVar("T")
Command = tuple[Any, ...]


@dataclass(frozen=True)
class Pipeline:
    """Commands sent in one round trip, not transactional; replies come back in order."""

    commands: list[Command]


@dataclass(frozen=True)
class Embed:
    """Texts for the embedding function; `query` embeds one search query."""

    texts: list[str]
    query: bool = False


StoreOp = Generator[Pipeline | Embed, Any, T]

OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": lambda a, b: a == b,
    "$ne": lambda a, b: a != b,
    "$gt": lambda a, b: float(a) > float(b),
    "$gte": lambda a, b: float(a) >= float(b),
    "$lt": lambda a, b: float(a) < float(b),
    "$lte": lambda a, b: float(a) <= float(b),
}


@dataclass(frozen=True, kw_only=True)
class Layout:
    """Key templates of the store and what shapes its behaviour."""

    prefix: str
    ttl_config: TTLConfig | None = None
    index_fields: tuple[str, ...] = ()  # empty: no embeddings configured
    sealer: Sealer = field(default_factory=Sealer)  # item documents are sealed at rest

    def ns(self, namespace: tuple[str, ...]) -> str:
        """Labels joined by periods.

        A period inside a label is encoded, so `("a.b",)` (which the store refuses anyway) could
        never reach `("a", "b")`.
        """
        return ".".join(escape(label).replace(".", "%2E") for label in namespace)

    def item(self, namespace: tuple[str, ...], key: str) -> str:
        return f"{self.prefix}:{{{self.ns(namespace)}}}:item:{escape(key)}"

    def keys(self, namespace: tuple[str, ...]) -> str:
        return f"{self.prefix}:{{{self.ns(namespace)}}}:keys"

    @property
    def namespaces(self) -> str:
        return f"{self.prefix}:namespaces"


def expiry_s(ttl_minutes: float) -> int:
    """A TTL in minutes as Redis's whole seconds: at least one (EX 0 is refused)."""
    return max(1, math.ceil(ttl_minutes * 60))


def matches(value: Any, wanted: Any) -> bool:
    """A filter value against an item value: equality, nested objects, or `$` operators."""
    if isinstance(wanted, dict):
        if any(k.startswith("$") for k in wanted):
            unknown = sorted(set(wanted) - set(OPERATORS))
            if unknown:  # a caller's mistake, as the reference answers it
                raise ValueError(f"Unsupported operator: {unknown[0]}")
            return all(OPERATORS[op](value, arg) for op, arg in wanted.items())
        return isinstance(value, dict) and all(matches(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (
            isinstance(value, list | tuple)
            and len(value) == len(wanted)
            and all(matches(v, w) for v, w in zip(value, wanted, strict=True))
        )
    return bool(value == wanted)


def ns_match(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """Whether a namespace satisfies one `list_namespaces` condition (`*` matches any label)."""
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    pairs = (
        zip(namespace, path, strict=False)
        if condition.match_type == "prefix"
        else zip(reversed(namespace), reversed(path), strict=False)
    )
    return all(p == "*" or n == p for n, p in pairs)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity, 0 for a zero vector (so an empty embedding never ranks first)."""
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(y * y for y in b))
    return sum(x * y for x, y in zip(a, b, strict=False)) / (na * nb) if na and nb else 0.0


def text_score(query: str, value: dict[str, Any]) -> float:
    """Share of the query's words found in the value's text (no embeddings configured)."""
    words = [w for w in query.lower().split() if w]
    text = json.dumps(value, ensure_ascii=False).lower()
    return sum(w in text for w in words) / len(words) if words else 0.0


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _load(lay: Layout, raw: Any, namespace: tuple[str, ...], key: str) -> dict[str, Any] | None:
    if raw is None:
        return None
    return {
        **json.loads(lay.sealer.open(raw, lay.item(namespace, key))),
        "namespace": namespace,
        "key": key,
    }


def to_item(data: dict[str, Any], score: float | None = None, search: bool = False) -> Item:
    """A stored item as LangGraph's `Item`, or `SearchItem` with its score for a search."""
    fields = {
        "namespace": data["namespace"],
        "key": data["key"],
        "value": data["value"],
        "created_at": datetime.fromtimestamp(data["created_at"], UTC),
        "updated_at": datetime.fromtimestamp(data["updated_at"], UTC),
    }
    return SearchItem(**fields, score=score) if search else Item(**fields)


# --- operations ---------------------------------------------------------------


def batch(lay: Layout, ops: Iterable[Op]) -> StoreOp[list[Result]]:
    """Reads in order, then the puts (the last write to a key wins), like InMemoryStore."""
    results: list[Result] = []
    puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
    for op in ops:
        if isinstance(op, GetOp):
            results.append((yield from get(lay, op)))
        elif isinstance(op, SearchOp):
            results.append((yield from search(lay, op)))
        elif isinstance(op, ListNamespacesOp):
            results.append((yield from list_namespaces(lay, op)))
        elif isinstance(op, PutOp):
            puts[(op.namespace, op.key)] = op
            results.append(None)
        else:
            raise ValueError(f"unknown store operation {type(op).__name__}")
    for put_op in puts.values():
        yield from put(lay, put_op)
    return results


def get(lay: Layout, op: GetOp) -> StoreOp[Item | None]:
    """One item, or None where it is missing or its TTL has passed."""
    (raw,) = yield Pipeline([("GET", lay.item(op.namespace, op.key))])
    data = _load(lay, raw, op.namespace, op.key)
    if data is None:
        return None
    refresh = lay.ttl_config.get("refresh_on_read", True) if lay.ttl_config else True
    if op.refresh_ttl and refresh and data.get("ttl"):
        yield Pipeline([("EXPIRE", lay.item(op.namespace, op.key), expiry_s(data["ttl"]))])
    return to_item(data)


def put(lay: Layout, op: PutOp) -> StoreOp[None]:
    """Store or delete one item and keep its namespace's key index and embeddings in step."""
    item_key, keys_key, ns = (
        lay.item(op.namespace, op.key),
        lay.keys(op.namespace),
        lay.ns(op.namespace),
    )
    if op.value is None:
        _, _, left = yield Pipeline(
            [("DEL", item_key), ("ZREM", keys_key, escape(op.key)), ("ZCARD", keys_key)]
        )
        if not left:
            yield Pipeline([("ZREM", lay.namespaces, ns)])
        return None
    now = time.time()
    (previous,) = yield Pipeline([("GET", item_key)])
    created = json.loads(lay.sealer.open(previous, item_key))["created_at"] if previous else now
    vectors: dict[str, list[float]] = {}
    if lay.index_fields and op.index is not False:
        paths = lay.index_fields if op.index is None else tuple(op.index)
        texts = [(p, t) for p in paths for t in get_text_at_path(op.value, p)]
        if texts:
            embedded = yield Embed([t for _, t in texts])
            vectors = {
                f"{p}#{i}": list(v)
                for i, ((p, _), v) in enumerate(zip(texts, embedded, strict=True))
            }
    doc = lay.sealer.seal_text(
        json.dumps(
            {
                "value": dict(op.value),
                "created_at": created,
                "updated_at": now,
                "ttl": op.ttl,
                "vectors": vectors,
            },
            ensure_ascii=False,
        ),
        item_key,
    )
    set_cmd: Command = (
        ("SET", item_key, doc, "EX", expiry_s(op.ttl)) if op.ttl else ("SET", item_key, doc)
    )
    # Insertion order, kept on update, as LangGraph's InMemoryStore keeps it.
    yield Pipeline(
        [
            set_cmd,
            ("ZADD", keys_key, "NX", created, escape(op.key)),
            ("ZADD", lay.namespaces, "NX", now, ns),
        ]
    )
    return None


def all_namespaces(lay: Layout) -> StoreOp[list[tuple[str, ...]]]:
    """Every namespace holding an item, from the namespace index (no SCAN)."""
    (members,) = yield Pipeline([("ZRANGE", lay.namespaces, 0, -1)])
    return [tuple(unescape(part) for part in _text(m).split(".")) for m in members]


def items_of(
    lay: Layout, namespace: tuple[str, ...], start: int = 0, stop: int = -1
) -> StoreOp[list[dict[str, Any]]]:
    """A namespace's items in key order, `start` to `stop` inclusive as ZRANGE counts."""
    (raw_keys,) = yield Pipeline([("ZRANGE", lay.keys(namespace), start, stop)])
    keys = [unescape(_text(k)) for k in raw_keys]
    if not keys:
        return []
    (raws,) = yield Pipeline([("MGET", *(lay.item(namespace, k) for k in keys))])
    expired = [escape(k) for k, raw in zip(keys, raws, strict=True) if raw is None]
    if expired:  # items gone by TTL: drop them from the index too
        yield Pipeline([("ZREM", lay.keys(namespace), *expired)])
    return [
        d
        for k, raw in zip(keys, raws, strict=True)
        if (d := _load(lay, raw, namespace, k)) is not None
    ]


def page(
    lay: Layout, namespaces: list[tuple[str, ...]], offset: int, limit: int
) -> StoreOp[list[dict[str, Any]]]:
    """Without filter or query, read only the items of the requested page."""
    if not namespaces:
        return []
    sizes = yield Pipeline([("ZCARD", lay.keys(ns)) for ns in namespaces])
    out: list[dict[str, Any]] = []
    for ns, size in zip(namespaces, sizes, strict=True):
        if len(out) >= limit:
            break
        if offset >= int(size):
            offset -= int(size)
            continue
        out += yield from items_of(lay, ns, offset, offset + (limit - len(out)) - 1)
        offset = 0
    return out


def search(lay: Layout, op: SearchOp) -> StoreOp[list[SearchItem]]:
    """Items under a prefix: by filter, ranked by the query's similarity when one is given."""
    n = len(op.namespace_prefix)
    under = [ns for ns in (yield from all_namespaces(lay)) if ns[:n] == op.namespace_prefix]
    if not op.query and not op.filter:
        found = yield from page(lay, under, op.offset, op.limit)
        return [to_item(d, search=True) for d in found]  # type: ignore[misc]  # SearchItem
    candidates: list[dict[str, Any]] = []
    for ns in under:
        candidates += [
            d
            for d in (yield from items_of(lay, ns))
            if not op.filter or all(matches(d["value"].get(k), v) for k, v in op.filter.items())
        ]
    if not op.query:
        return [to_item(d, search=True) for d in candidates[op.offset : op.offset + op.limit]]  # type: ignore[misc]  # SearchItem
    if lay.index_fields:
        (query,) = yield Embed([op.query], query=True)
        scored = [
            (max((cosine(query, v) for v in d["vectors"].values()), default=None), d)
            for d in candidates
        ]
    else:
        scored = [(s, d) for d in candidates if (s := text_score(op.query, d["value"]))]
    ranked = sorted(scored, key=lambda sd: -1.0 if sd[0] is None else -sd[0])
    return [to_item(d, s, search=True) for s, d in ranked[op.offset : op.offset + op.limit]]  # type: ignore[misc]  # SearchItem


def list_namespaces(lay: Layout, op: ListNamespacesOp) -> StoreOp[list[tuple[str, ...]]]:
    """Namespaces matching every condition, cut to `max_depth`, paged as asked."""
    found = [
        ns
        for ns in (yield from all_namespaces(lay))
        if all(ns_match(c, ns) for c in op.match_conditions or ())
    ]
    if op.max_depth is not None:
        found = [ns[: op.max_depth] for ns in found]
    return sorted(set(found))[op.offset : op.offset + op.limit]
