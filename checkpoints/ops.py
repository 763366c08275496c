"""The saver's operations as I/O-free generators.

Each operation yields :class:`Batch` es of Redis commands and receives their replies,
so the sync and async savers share one implementation and differ only in the driver
that sends a batch. One batch is one round trip.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    PendingWrite,
    get_serializable_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from checkpoints import codec
from checkpoints.codec import Doc
from checkpoints.keys import Keys, escape, unescape

Command = tuple[Any, ...]
T = TypeVar("T")

# Pseudo-command: refresh the expiry of a thread's registry and every key it lists.
TTL = "GW.TTL"


@dataclass(frozen=True)
class Batch:
    """Commands sent in one round trip.

    ``commands`` touch one thread's slot and run in MULTI/EXEC when ``atomic``;
    ``extra`` touch global indexes: same transaction on a single node, a separate
    pipeline on a cluster (they live on other slots). Replies come back in order,
    ``commands`` first.
    """

    commands: list[Command]
    atomic: bool = False
    extra: list[Command] = field(default_factory=list)


Op = Generator[Batch, list[Any], T]


@dataclass(frozen=True, kw_only=True)
class Ctx:
    """What every operation needs: key templates, serializer, TTL, clock."""

    keys: Keys
    serde: SerializerProtocol
    ttl_s: int | None = None


def _cfg(config: RunnableConfig) -> tuple[str, str, str | None]:
    conf = config["configurable"]
    return str(conf["thread_id"]), str(conf.get("checkpoint_ns", "")), conf.get("checkpoint_id")


def _ttl(ctx: Ctx, thread_id: str) -> list[Command]:
    if not ctx.ttl_s:
        return []
    return [(TTL, ctx.keys.registry(thread_id), ctx.ttl_s)]


def _config(thread_id: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": ns,
            "checkpoint_id": checkpoint_id,
        }
    }


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


# --- writing ---------------------------------------------------------------


def put(
    ctx: Ctx,
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    new_versions: ChannelVersions,
    now_ms: int,
) -> Op[RunnableConfig]:
    thread_id, ns, parent_id = _cfg(config)
    k = ctx.keys
    values = checkpoint["channel_values"]
    meta = get_serializable_checkpoint_metadata(config, metadata)
    doc = codec.encode_doc(codec.make_doc(ctx.serde, checkpoint, meta, parent_id))
    cid = checkpoint["id"]
    blobs: list[Any] = []
    for channel, version in new_versions.items():
        typed = ctx.serde.dumps_typed(values[channel]) if channel in values else (codec.EMPTY, b"")
        blobs += [codec.blob_field(channel, version), codec.encode_typed(typed)]
    own = [
        k.head(thread_id, ns),
        k.checkpoints(thread_id, ns),
        k.index(thread_id, ns),
        k.blobs(thread_id, ns),
        k.namespaces(thread_id),
    ]
    cmds: list[Command] = [("HSET", k.blobs(thread_id, ns), *blobs)] if blobs else []
    cmds += [
        ("HSET", k.checkpoints(thread_id, ns), cid, doc),
        ("ZADD", k.index(thread_id, ns), 0, cid),
        ("SET", k.head(thread_id, ns), doc),
        ("SADD", k.namespaces(thread_id), ns),
    ]
    extra: list[Command] = [("ZADD", k.threads(), now_ms, escape(thread_id))]
    run_id = meta.get("run_id")
    if run_id:
        run_key = k.thread_run(thread_id, str(run_id))
        cmds.append(("SADD", run_key, f"{ns}{codec.SEP}{cid}"))
        own.append(run_key)
        extra.append(("SADD", k.run(str(run_id)), escape(thread_id)))
    cmds.append(("SADD", k.registry(thread_id), *own))
    cmds += _ttl(ctx, thread_id)
    yield Batch(cmds, atomic=True, extra=extra)
    return _config(thread_id, ns, cid)


def put_writes(
    ctx: Ctx,
    config: RunnableConfig,
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str,
) -> Op[None]:
    thread_id, ns, cid = _cfg(config)
    if cid is None:
        raise ValueError("put_writes needs a config with a checkpoint_id")
    key = ctx.keys.writes(thread_id, ns, cid)
    cmds: list[Command] = []
    for idx, (channel, value) in enumerate(writes):
        widx = WRITES_IDX_MAP.get(channel, idx)
        payload = codec.encode_write(ctx.serde, task_id, channel, value, task_path)
        # Regular writes are idempotent per (task_id, idx): the first one stays.
        # Special channels (error, interrupt, resume) are replaced, as LangGraph expects.
        cmds.append(
            ("HSET" if widx < 0 else "HSETNX", key, codec.write_field(task_id, widx), payload)
        )
    if not cmds:
        return None
    cmds.append(("SADD", ctx.keys.registry(thread_id), key))
    cmds += _ttl(ctx, thread_id)
    yield Batch(cmds, atomic=True)
    return None


# --- reading ---------------------------------------------------------------


def _decode(ctx: Ctx, raw: bytes, thread_id: str, ns: str) -> Doc:
    return codec.decode_doc(raw, key=ctx.keys.checkpoints(thread_id, ns))


def _assemble(
    ctx: Ctx,
    thread_id: str,
    ns: str,
    doc: Doc,
    checkpoint: Checkpoint,
    blob_values: Sequence[bytes | None],
    writes_raw: dict[bytes, bytes],
) -> CheckpointTuple:
    k = ctx.keys
    values: dict[str, Any] = {}
    for channel, raw in zip(checkpoint["channel_versions"], blob_values, strict=True):
        present, value = codec.load_blob(ctx.serde, raw, key=k.blobs(thread_id, ns))
        if present:
            values[channel] = value
    wkey = k.writes(thread_id, ns, doc.checkpoint_id)
    pending: list[PendingWrite] = [
        (w.task_id, w.channel, codec.load_write(ctx.serde, w, key=wkey))
        for w in codec.decode_writes(writes_raw, key=wkey)
    ]
    return CheckpointTuple(
        config=_config(thread_id, ns, doc.checkpoint_id),
        checkpoint={**checkpoint, "channel_values": values},
        metadata=codec.load_metadata(ctx.serde, doc, key=k.checkpoints(thread_id, ns)),
        parent_config=_config(thread_id, ns, doc.parent_id) if doc.parent_id else None,
        pending_writes=pending,
    )


def _load_many(ctx: Ctx, thread_id: str, ns: str, docs: list[Doc]) -> Op[list[CheckpointTuple]]:
    """One round trip: the blobs and pending writes of several documents."""
    if not docs:
        return []
    k = ctx.keys
    cps = [codec.load_checkpoint(ctx.serde, d, key=k.checkpoints(thread_id, ns)) for d in docs]
    fields = [codec.blob_field(ch, v) for cp in cps for ch, v in cp["channel_versions"].items()]
    cmds: list[Command] = [("HGETALL", k.writes(thread_id, ns, d.checkpoint_id)) for d in docs]
    if fields:
        cmds.append(("HMGET", k.blobs(thread_id, ns), *fields))
    replies = yield Batch(cmds)
    blob_values: list[bytes | None] = list(replies[len(docs)]) if fields else []
    out: list[CheckpointTuple] = []
    offset = 0
    for doc, cp, writes_raw in zip(docs, cps, replies, strict=False):
        n = len(cp["channel_versions"])
        out.append(
            _assemble(ctx, thread_id, ns, doc, cp, blob_values[offset : offset + n], writes_raw)
        )
        offset += n
    return out


def get_tuple(ctx: Ctx, config: RunnableConfig) -> Op[CheckpointTuple | None]:
    """At most two round trips for the latest checkpoint (three if the head is stale)."""
    thread_id, ns, cid = _cfg(config)
    k = ctx.keys
    raw: bytes | None
    if cid:
        (raw,) = yield Batch([("HGET", k.checkpoints(thread_id, ns), cid)])
    else:
        raw, newest = yield Batch(
            [
                ("GET", k.head(thread_id, ns)),
                ("ZREVRANGEBYLEX", k.index(thread_id, ns), "+", "-", "LIMIT", 0, 1),
            ]
        )
        if not newest:
            return None
        latest = _text(newest[0])
        if raw is None or _decode(ctx, raw, thread_id, ns).checkpoint_id != latest:
            # The head was moved by a put of an older id or by a delete: trust the index.
            (raw,) = yield Batch([("HGET", k.checkpoints(thread_id, ns), latest)])
    if raw is None:
        return None
    tuples = yield from _load_many(ctx, thread_id, ns, [_decode(ctx, raw, thread_id, ns)])
    return tuples[0]


@dataclass(frozen=True)
class Page:
    tuples: list[CheckpointTuple]
    last_id: str | None
    exhausted: bool


def list_page(
    ctx: Ctx,
    thread_id: str,
    ns: str,
    *,
    before_id: str | None,
    size: int,
    only_id: str | None,
    filter: dict[str, Any] | None,
) -> Op[Page]:
    """One page of a namespace, newest first: three round trips per page."""
    k = ctx.keys
    if only_id is not None:
        ids = [only_id] if before_id is None or only_id < before_id else []
        exhausted = True
    else:
        start = f"({before_id}" if before_id else "+"
        (found,) = yield Batch(
            [("ZREVRANGEBYLEX", k.index(thread_id, ns), start, "-", "LIMIT", 0, size)]
        )
        ids = [_text(i) for i in found]
        exhausted = len(ids) < size
    if not ids:
        return Page([], None, True)
    (raws,) = yield Batch([("HMGET", k.checkpoints(thread_id, ns), *ids)])
    docs = [_decode(ctx, r, thread_id, ns) for r in raws if r is not None]
    if filter:
        key = k.checkpoints(thread_id, ns)
        docs = [d for d in docs if _matches(codec.load_metadata(ctx.serde, d, key=key), filter)]
    tuples = yield from _load_many(ctx, thread_id, ns, docs)
    return Page(tuples, ids[-1], exhausted)


def _matches(metadata: CheckpointMetadata, filter: dict[str, Any]) -> bool:
    return all(metadata.get(key) == value for key, value in filter.items())


def namespaces(ctx: Ctx, thread_id: str) -> Op[list[str]]:
    (members,) = yield Batch([("SMEMBERS", ctx.keys.namespaces(thread_id))])
    return sorted(_text(m) for m in members)


def thread_page(ctx: Ctx, start: int, size: int) -> Op[list[tuple[str, float]]]:
    """Thread ids with their last write time (ms), most recent first."""
    (rows,) = yield Batch(
        [("ZREVRANGE", ctx.keys.threads(), start, start + size - 1, "WITHSCORES")]
    )
    return [(unescape(_text(member)), float(score)) for member, score in rows]


# --- deleting and copying --------------------------------------------------


def delete_thread(ctx: Ctx, thread_id: str) -> Op[None]:
    k = ctx.keys
    (members,) = yield Batch([("SMEMBERS", k.registry(thread_id))])
    yield Batch(
        [("DEL", k.registry(thread_id), *members)],
        atomic=True,
        extra=[("ZREM", k.threads(), escape(thread_id))],
    )
    return None


def _rebuild_heads(ctx: Ctx, thread_id: str, nss: Sequence[str]) -> Op[None]:
    """Point each namespace's head at its newest remaining checkpoint."""
    k = ctx.keys
    newest = yield Batch(
        [("ZREVRANGEBYLEX", k.index(thread_id, ns), "+", "-", "LIMIT", 0, 1) for ns in nss]
    )
    live = [(ns, _text(ids[0])) for ns, ids in zip(nss, newest, strict=True) if ids]
    docs = yield Batch([("HGET", k.checkpoints(thread_id, ns), cid) for ns, cid in live])
    cmds: list[Command] = [("DEL", k.head(thread_id, ns)) for ns in nss]
    cmds += [("SET", k.head(thread_id, ns), d) for (ns, _), d in zip(live, docs, strict=True) if d]
    yield Batch(cmds, atomic=True)
    return None


def _drop_checkpoints(ctx: Ctx, thread_id: str, ns: str, ids: Sequence[str]) -> list[Command]:
    k = ctx.keys
    if not ids:
        return []
    wkeys = [k.writes(thread_id, ns, cid) for cid in ids]
    return [
        ("HDEL", k.checkpoints(thread_id, ns), *ids),
        ("ZREM", k.index(thread_id, ns), *ids),
        ("DEL", *wkeys),
        ("SREM", k.registry(thread_id), *wkeys),
    ]


def delete_for_runs(ctx: Ctx, run_ids: Sequence[str]) -> Op[None]:
    k = ctx.keys
    for run_id in run_ids:
        (threads,) = yield Batch([("SMEMBERS", k.run(run_id))])
        for thread_id in (unescape(_text(t)) for t in threads):
            run_key = k.thread_run(thread_id, run_id)
            (members,) = yield Batch([("SMEMBERS", run_key)])
            by_ns: dict[str, list[str]] = {}
            for member in members:
                ns, _, cid = _text(member).partition(codec.SEP)
                by_ns.setdefault(ns, []).append(cid)
            cmds: list[Command] = [("DEL", run_key), ("SREM", k.registry(thread_id), run_key)]
            for ns, ids in by_ns.items():
                cmds += _drop_checkpoints(ctx, thread_id, ns, ids)
            yield Batch(cmds, atomic=True)
            yield from _rebuild_heads(ctx, thread_id, sorted(by_ns))
        yield Batch([("DEL", k.run(run_id))])
    return None


PRUNE_STRATEGIES = ("keep_latest", "delete")


def prune(ctx: Ctx, thread_ids: Sequence[str], strategy: str) -> Op[None]:
    """Prune each thread by one of ``PRUNE_STRATEGIES`` (the saver checks which)."""
    for thread_id in thread_ids:
        if strategy == "delete":
            yield from delete_thread(ctx, thread_id)
        else:
            yield from prune_keep_latest(ctx, thread_id)
    return None


def prune_keep_latest(ctx: Ctx, thread_id: str) -> Op[None]:
    """Keep the newest checkpoint of each namespace, its writes and the blobs it uses."""
    k = ctx.keys
    nss = yield from namespaces(ctx, thread_id)
    if not nss:
        return None
    replies = yield Batch(
        [
            c
            for ns in nss
            for c in (("ZRANGE", k.index(thread_id, ns), 0, -1), ("HKEYS", k.blobs(thread_id, ns)))
        ]
    )
    plans = []
    for i, ns in enumerate(nss):
        ids = [_text(x) for x in replies[2 * i]]
        if ids:
            plans.append((ns, ids[-1], ids[:-1], [_text(f) for f in replies[2 * i + 1]]))
    raws = yield Batch(
        [("HGET", k.checkpoints(thread_id, ns), latest) for ns, latest, _, _ in plans]
    )
    cmds: list[Command] = []
    for (ns, _, old, fields), raw in zip(plans, raws, strict=True):
        cmds += _drop_checkpoints(ctx, thread_id, ns, old)
        if raw is None:
            continue
        doc = _decode(ctx, raw, thread_id, ns)
        cp = codec.load_checkpoint(ctx.serde, doc, key=k.checkpoints(thread_id, ns))
        used = {codec.blob_field(ch, v) for ch, v in cp["channel_versions"].items()}
        unused = [f for f in fields if f not in used]
        if unused:
            cmds.append(("HDEL", k.blobs(thread_id, ns), *unused))
        cmds.append(("SET", k.head(thread_id, ns), raw))
    if cmds:
        yield Batch(cmds, atomic=True)
    return None


def copy_thread(ctx: Ctx, source: str, target: str, now_ms: int) -> Op[None]:
    k = ctx.keys
    nss = yield from namespaces(ctx, source)
    if not nss:
        return None
    replies = yield Batch(
        [
            c
            for ns in nss
            for c in (("HGETALL", k.checkpoints(source, ns)), ("HGETALL", k.blobs(source, ns)))
        ]
    )
    cmds: list[Command] = []
    extra: list[Command] = [("ZADD", k.threads(), now_ms, escape(target))]
    own: list[str] = [k.namespaces(target)]
    per_ns: list[tuple[str, list[str]]] = []
    for i, ns in enumerate(nss):
        docs: dict[bytes, bytes] = replies[2 * i]
        blobs: dict[bytes, bytes] = replies[2 * i + 1]
        if not docs:
            continue
        ids = sorted(_text(c) for c in docs)
        per_ns.append((ns, ids))
        cmds += [
            ("HSET", k.checkpoints(target, ns), *[x for kv in docs.items() for x in kv]),
            ("ZADD", k.index(target, ns), *[x for cid in ids for x in (0, cid)]),
            ("SET", k.head(target, ns), docs[ids[-1].encode()]),
            ("SADD", k.namespaces(target), ns),
        ]
        if blobs:
            cmds.append(("HSET", k.blobs(target, ns), *[x for kv in blobs.items() for x in kv]))
        own += [
            k.head(target, ns),
            k.checkpoints(target, ns),
            k.index(target, ns),
            k.blobs(target, ns),
        ]
        for raw in docs.values():
            doc = _decode(ctx, raw, source, ns)
            meta = codec.load_metadata(ctx.serde, doc, key=k.checkpoints(source, ns))
            if run_id := meta.get("run_id"):
                run_key = k.thread_run(target, str(run_id))
                cmds.append(("SADD", run_key, f"{ns}{codec.SEP}{doc.checkpoint_id}"))
                own.append(run_key)
                extra.append(("SADD", k.run(str(run_id)), escape(target)))
    writes = yield Batch(
        [("HGETALL", k.writes(source, ns, cid)) for ns, ids in per_ns for cid in ids]
    )
    pairs = [(ns, cid) for ns, ids in per_ns for cid in ids]
    for (ns, cid), raw_writes in zip(pairs, writes, strict=True):
        if raw_writes:
            wkey = k.writes(target, ns, cid)
            cmds.append(("HSET", wkey, *[x for kv in raw_writes.items() for x in kv]))
            own.append(wkey)
    cmds.append(("SADD", k.registry(target), *own))
    cmds += _ttl(ctx, target)
    yield Batch(cmds, atomic=True, extra=extra)
    return None


# --- delta channels --------------------------------------------------------


def delta_channel_history(
    ctx: Ctx, config: RunnableConfig, channels: Sequence[str]
) -> Op[dict[str, DeltaChannelHistory]]:
    """Walk the parent chain in three batched round trips, whatever its length."""
    if not channels:
        return {}
    thread_id, ns, cid = _cfg(config)
    k = ctx.keys
    ckey = k.checkpoints(thread_id, ns)
    all_docs, newest = yield Batch(
        [("HGETALL", ckey), ("ZREVRANGEBYLEX", k.index(thread_id, ns), "+", "-", "LIMIT", 0, 1)]
    )
    docs = {_text(c): _decode(ctx, raw, thread_id, ns) for c, raw in all_docs.items()}
    target = cid or (_text(newest[0]) if newest else None)
    chain: list[Doc] = []
    cursor = docs[target].parent_id if target in docs else None
    while cursor is not None and cursor in docs:
        chain.append(docs[cursor])
        cursor = docs[cursor].parent_id
    versions = [codec.load_checkpoint(ctx.serde, d, key=ckey)["channel_versions"] for d in chain]
    wanted = [
        (i, ch, codec.blob_field(ch, v[ch]))
        for i, v in enumerate(versions)
        for ch in channels
        if ch in v
    ]
    blob_raw: list[bytes | None] = []
    if wanted:
        (blob_raw,) = yield Batch([("HMGET", k.blobs(thread_id, ns), *[w[2] for w in wanted])])
    seeds: dict[str, tuple[int, Any]] = {}
    for (i, ch, _), raw in zip(wanted, blob_raw, strict=True):
        if ch in seeds:
            continue
        present, value = codec.load_blob(ctx.serde, raw, key=k.blobs(thread_id, ns))
        if present:
            seeds[ch] = (i, value)
    # Writes are needed down to the deepest seed (or the root when a channel has none).
    depth = len(chain) if len(seeds) < len(channels) else max(i for i, _ in seeds.values()) + 1
    replies = yield Batch(
        [("HGETALL", k.writes(thread_id, ns, d.checkpoint_id)) for d in chain[:depth]]
    )
    history: dict[str, DeltaChannelHistory] = {ch: {"writes": []} for ch in channels}
    for i in reversed(range(depth)):
        wkey = k.writes(thread_id, ns, chain[i].checkpoint_id)
        for w in codec.decode_writes(replies[i], key=wkey):
            if w.channel in history and (w.channel not in seeds or i <= seeds[w.channel][0]):
                value = codec.load_write(ctx.serde, w, key=wkey)
                history[w.channel]["writes"].append((w.task_id, w.channel, value))
    for ch, (_, value) in seeds.items():
        history[ch]["seed"] = value
    return history
