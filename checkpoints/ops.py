"""The saver's hot operations as I/O-free generators: put, put_writes, get_tuple.

Each operation yields `Batch` es of Redis commands and receives their replies,
so the sync and async savers share one implementation and differ only in the driver
that sends a batch. One batch is one round trip. `put`, `put_writes` and the
latest `get_tuple` cost one, one and two round trips, and the server work of each
does not grow with the thread (see `graphwright.checkpoints.scripts`). Listing lives in
`graphwright.checkpoints.ops_list`, DeltaChannel history in `graphwright.checkpoints.ops_delta`, the
rarer operations (delete, copy, prune) in `graphwright.checkpoints.ops_admin`.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    PendingWrite,
    get_serializable_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from graphwright.checkpoints import codec
from graphwright.checkpoints.codec import Doc
from graphwright.checkpoints.keys import Keys, escape

Command = tuple[Any, ...]
T = TypeVar("T")

SCRIPT = "GW.SCRIPT"  # pseudo-command: (SCRIPT, name, numkeys, *keys, *args)
FENCE = "gw_fence"  # configurable key carrying the run's fencing token


@dataclass(frozen=True)
class Batch:
    """Commands sent in one round trip; `atomic` ones run as one script call."""

    commands: list[Command]
    atomic: bool = False


Op = Generator[Batch, list[Any], T]


@dataclass(frozen=True, kw_only=True)
class Ctx:
    """What every operation needs: key templates, serializer, TTL, deployment."""

    keys: Keys
    serde: SerializerProtocol
    ttl_s: int | None = None
    cluster: bool = False  # global indexes live on other slots: separate batches
    stamp_thread: bool = False  # name the thread in each checkpoint's metadata (see SaverBase)


class LegacyThread(Exception):
    """The thread holds data of layout 1; the caller migrates it and retries."""

    def __init__(self, thread_id: str) -> None:
        super().__init__(thread_id)
        self.thread_id = thread_id


def script(name: str, keys: Sequence[str], args: Iterable[Any]) -> Command:
    """An EVALSHA-style command for a named saver script (the driver resolves the name)."""
    return (SCRIPT, name, len(keys), *keys, *args)


def upper(prefix: bytes) -> bytes:
    """Exclusive lexical bound just past every member that starts with `prefix`."""
    return b"(" + prefix[:-1] + b"\x01"


def cfg(config: RunnableConfig) -> tuple[str, str, str | None]:
    """The thread id, namespace and checkpoint id a LangGraph config names."""
    conf = config["configurable"]
    return str(conf["thread_id"]), str(conf.get("checkpoint_ns", "")), conf.get("checkpoint_id")


def _fence(config: RunnableConfig) -> str:
    token = config["configurable"].get(FENCE)
    return "" if token is None else str(int(token))


def tuple_config(thread_id: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    """The config a CheckpointTuple carries for a stored checkpoint."""
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": ns,
            "checkpoint_id": checkpoint_id,
        }
    }


def text(value: bytes | str) -> str:
    """Redis replies are bytes on one client and str on another: this reads both."""
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
    """One round trip.

    The first put of a thread, or of a run in it, adds one for the global indexes. With a fencing
    token it is one script call.
    """
    thread_id, ns, parent_id = cfg(config)
    k = ctx.keys
    values = checkpoint["channel_values"]
    meta = stored_metadata(ctx, config, metadata)
    doc = codec.make_doc(ctx.serde, ns, checkpoint, meta, parent_id)
    fields: list[Any] = []
    for channel, version in new_versions.items():
        typed = ctx.serde.dumps_typed(values[channel]) if channel in values else (codec.EMPTY, b"")
        fields += [codec.blob_field(ns, channel, version), codec.encode_typed(typed)]
    run_id = doc.run_id or ""
    prefix = codec.checkpoint_prefix(ns, doc.checkpoint_id)
    token = _fence(config)
    if token:
        flags = yield from _fenced_put(ctx, thread_id, doc, prefix, fields, token, now_ms)
    else:
        cp = k.checkpoints(thread_id)
        # What is indexed, not what this put added: a replayed first put still indexes.
        cmds: list[Command] = [
            ("HMGET", k.indexed(thread_id), "thread", f"run:{run_id}"),
            ("ZREMRANGEBYLEX", cp, b"[" + prefix, upper(prefix)),
        ]
        if fields:  # blobs before the checkpoint that reads them
            cmds.append(("HSET", k.blobs(thread_id), *fields))
        cmds.append(("ZADD", cp, 0, codec.encode_doc(doc)))
        if run_id:
            cmds.append(("SADD", k.run_ids(thread_id), run_id))
        cmds += _expire(ctx, thread_id)
        replies = yield Batch(cmds)
        thread_done, run_done = replies[0]
        flags = (0 if thread_done else 1) | (2 if run_id and not run_done else 0)
    if flags and (ctx.cluster or not token):
        yield Batch(_index_commands(ctx, thread_id, run_id, flags, now_ms))
    return tuple_config(thread_id, ns, doc.checkpoint_id)


def stored_metadata(
    ctx: Ctx, config: RunnableConfig, metadata: CheckpointMetadata
) -> CheckpointMetadata:
    """The metadata `put` stores with a checkpoint given `config` and `metadata`."""
    meta = get_serializable_checkpoint_metadata(config, metadata)
    if ctx.stamp_thread:  # the thread's id too, as the Agent Server's checkpoints carry it,
        # and the checkpoint the caller's config named (a fork's origin), which its saver keeps
        named = (config.get("metadata") or {}).get("checkpoint_id")
        meta = cast(
            CheckpointMetadata,
            {"thread_id": cfg(config)[0], **meta, **({"checkpoint_id": named} if named else {})},
        )
    return meta


def _expire(ctx: Ctx, thread_id: str, keys: Sequence[str] | None = None) -> list[Command]:
    if not ctx.ttl_s:
        return []
    return [("EXPIRE", key, ctx.ttl_s) for key in keys or ctx.keys.ttl_keys(thread_id)]


def _index_commands(
    ctx: Ctx, thread_id: str, run_id: str, flags: int, now_ms: int
) -> list[Command]:
    """Global index entries for a new thread (flag 1) or a new run in it (flag 2)."""
    k = ctx.keys
    tid = escape(thread_id)
    cmds: list[Command] = []
    if flags & 1:
        cmds += [("ZADD", k.threads(), "NX", now_ms, tid), ("ZADD", k.thread_ids(), 0, tid)]
    if flags & 2:
        cmds.append(("SADD", k.run(run_id), tid))
    # Marked last: a batch cut short before this is written again by the next put.
    done = [x for f, name in ((1, "thread"), (2, f"run:{run_id}")) if flags & f for x in (name, 1)]
    cmds.append(("HSET", k.indexed(thread_id), *done))
    return cmds + _expire(ctx, thread_id, (k.indexed(thread_id),))


def _fenced_put(
    ctx: Ctx,
    thread_id: str,
    doc: Doc,
    prefix: bytes,
    fields: list[Any],
    token: str,
    now_ms: int,
) -> Op[int]:
    k = ctx.keys
    ttl_keys = k.ttl_keys(thread_id) if ctx.ttl_s else ()
    run_id = doc.run_id or ""
    glob = () if ctx.cluster else (k.threads(), k.thread_ids(), k.run(run_id))
    keys = (
        k.checkpoints(thread_id),
        k.blobs(thread_id),
        k.run_ids(thread_id),
        k.fence(thread_id),
        k.indexed(thread_id),
    )
    args = (
        prefix,
        codec.encode_doc(doc),
        token,
        run_id,
        ctx.ttl_s or "",
        len(ttl_keys),
        "0" if ctx.cluster else "1",
        now_ms,
        escape(thread_id),
        *fields,
    )
    (flags,) = yield Batch([script("put", (*keys, *ttl_keys, *glob), args)])
    return int(flags)


def put_writes(
    ctx: Ctx,
    config: RunnableConfig,
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str,
) -> Op[None]:
    """One round trip: the writes, then their index entries (one script call if fenced)."""
    thread_id, ns, cid = cfg(config)
    if cid is None:
        raise ValueError("put_writes needs a config with a checkpoint_id")
    if not writes:
        return None
    k = ctx.keys
    prefix = codec.checkpoint_prefix(ns, cid)
    encoded = []
    for idx, (channel, value) in enumerate(writes):
        widx = WRITES_IDX_MAP.get(channel, idx)
        field, payload = codec.encode_write(
            ctx.serde, prefix, task_id, widx, channel, value, task_path
        )
        encoded.append((widx < 0, field, payload))
    w, wi = k.writes(thread_id), k.write_index(thread_id)
    token = _fence(config)
    if token:
        args: list[Any] = [token, ctx.ttl_s or ""]
        for replace, field, payload in encoded:
            args += ["1" if replace else "0", field, payload]
        yield Batch([script("put_writes", (w, wi, k.fence(thread_id)), args)])
        return None
    cmds: list[Command] = [
        ("HSET" if replace else "HSETNX", w, field, payload) for replace, field, payload in encoded
    ]
    cmds.append(("ZADD", wi, *[x for _, field, _ in encoded for x in (0, field)]))
    yield Batch(cmds + _expire(ctx, thread_id, (w, wi)))
    return None


# --- reading ---------------------------------------------------------------


def decode(ctx: Ctx, raw: bytes, thread_id: str) -> Doc:
    """Decode a checkpoint document, naming the thread's key if it is corrupt."""
    return codec.decode_doc(raw, key=ctx.keys.checkpoints(thread_id))


def _assemble(
    ctx: Ctx,
    thread_id: str,
    doc: Doc,
    checkpoint: Checkpoint,
    blob_values: Sequence[bytes | None],
    writes: Writes,
) -> CheckpointTuple:
    k = ctx.keys
    values: dict[str, Any] = {}
    for channel, raw in zip(checkpoint["channel_versions"], blob_values, strict=True):
        present, value = codec.load_blob(ctx.serde, raw, key=k.blobs(thread_id))
        if present:
            values[channel] = value
    wkey = k.writes(thread_id)
    pending: list[PendingWrite] = [
        (w.task_id, w.channel, codec.load_write(ctx.serde, w, key=wkey))
        for w in codec.decode_writes(*writes, key=wkey)
    ]
    ns = doc.ns
    return CheckpointTuple(
        config=tuple_config(thread_id, ns, doc.checkpoint_id),
        checkpoint={**checkpoint, "channel_values": values},
        metadata=codec.load_metadata(ctx.serde, doc, key=k.checkpoints(thread_id)),
        parent_config=tuple_config(thread_id, ns, doc.parent_id) if doc.parent_id else None,
        pending_writes=pending,
    )


def load_checkpoint(ctx: Ctx, thread_id: str, doc: Doc) -> Checkpoint:
    """Load a document's checkpoint, naming the thread's key if it is corrupt."""
    return codec.load_checkpoint(ctx.serde, doc, key=ctx.keys.checkpoints(thread_id))


Writes = tuple[list[bytes], list[bytes | None]]  # one checkpoint's fields and values


def read_writes(ctx: Ctx, thread_id: str, docs: Sequence[Doc]) -> Op[list[Writes]]:
    """The pending writes of several checkpoints: two round trips (index, then values)."""
    k = ctx.keys
    wi = k.write_index(thread_id)
    prefixes = [codec.checkpoint_prefix(d.ns, d.checkpoint_id) for d in docs]
    if not prefixes:
        return []
    found = yield Batch([("ZRANGEBYLEX", wi, b"[" + p, upper(p)) for p in prefixes])
    fields = [f for per in found for f in per]
    values = list((yield Batch([("HMGET", k.writes(thread_id), *fields)]))[0]) if fields else []
    out: list[Writes] = []
    offset = 0
    for per in found:
        out.append((list(per), values[offset : offset + len(per)]))
        offset += len(per)
    return out


def load_tuples(
    ctx: Ctx, thread_id: str, docs: list[Doc], writes: list[Writes] | None
) -> Op[list[CheckpointTuple]]:
    """The tuples of `docs`.

    One round trip for their blobs (and two for their writes, if not given).
    """
    if not docs:
        return []
    k = ctx.keys
    cps = [load_checkpoint(ctx, thread_id, d) for d in docs]
    fields = [
        codec.blob_field(d.ns, ch, v)
        for d, cp in zip(docs, cps, strict=True)
        for ch, v in cp["channel_versions"].items()
    ]
    if writes is None:
        writes = yield from read_writes(ctx, thread_id, docs)
    blob_values: list[bytes | None] = (
        list((yield Batch([("HMGET", k.blobs(thread_id), *fields)]))[0]) if fields else []
    )
    out: list[CheckpointTuple] = []
    offset = 0
    for doc, cp, per in zip(docs, cps, writes, strict=True):
        n = len(cp["channel_versions"])
        out.append(_assemble(ctx, thread_id, doc, cp, blob_values[offset : offset + n], per))
        offset += n
    return out


def get_tuple(ctx: Ctx, config: RunnableConfig) -> Op[CheckpointTuple | None]:
    """Two round trips: the checkpoint with its writes (one script call), then its blobs."""
    thread_id, ns, cid = cfg(config)
    k = ctx.keys
    keys = (
        k.checkpoints(thread_id),
        k.writes(thread_id),
        k.write_index(thread_id),
        k.legacy_namespaces(thread_id),
    )
    (reply,) = yield Batch([script("read", keys, (codec.ns_prefix(ns), cid or ""))])
    if reply[0] is None:
        if reply[1]:
            raise LegacyThread(thread_id)
        return None
    raw, fields, values = reply
    tuples = yield from load_tuples(
        ctx, thread_id, [decode(ctx, raw, thread_id)], [(fields, values)]
    )
    return tuples[0]
