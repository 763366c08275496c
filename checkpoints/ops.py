"""The saver's hot operations as I/O-free generators: put, put_writes, reads, listing.

Each operation yields :class:`Batch` es of Redis commands and receives their replies,
so the sync and async savers share one implementation and differ only in the driver
that sends a batch. One batch is one round trip. ``put``, ``put_writes`` and the
latest ``get_tuple`` cost one, one and two round trips, and the server work of each
does not grow with the thread (see :mod:`checkpoints.scripts`). The rarer operations
(delete, copy, prune, migration) live in :mod:`checkpoints.ops_admin`.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

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

from checkpoints import codec
from checkpoints.codec import Doc
from checkpoints.keys import Keys, escape, unescape

Command = tuple[Any, ...]
T = TypeVar("T")

SCRIPT = "GW.SCRIPT"  # pseudo-command: (SCRIPT, name, numkeys, *keys, *args)
FENCE = "gw_fence"  # configurable key carrying the run's fencing token


@dataclass(frozen=True)
class Batch:
    """Commands sent in one round trip; ``atomic`` ones run as one script call."""

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


class LegacyThread(Exception):
    """The thread holds data of layout 1; the caller migrates it and retries."""

    def __init__(self, thread_id: str) -> None:
        super().__init__(thread_id)
        self.thread_id = thread_id


def script(name: str, keys: Sequence[str], args: Iterable[Any]) -> Command:
    return (SCRIPT, name, len(keys), *keys, *args)


def upper(prefix: bytes) -> bytes:
    """Exclusive lexical bound just past every member that starts with ``prefix``."""
    return b"(" + prefix[:-1] + b"\x01"


def cfg(config: RunnableConfig) -> tuple[str, str, str | None]:
    conf = config["configurable"]
    return str(conf["thread_id"]), str(conf.get("checkpoint_ns", "")), conf.get("checkpoint_id")


def _fence(config: RunnableConfig) -> str:
    token = config["configurable"].get(FENCE)
    return "" if token is None else str(int(token))


def tuple_config(thread_id: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": ns,
            "checkpoint_id": checkpoint_id,
        }
    }


def text(value: bytes | str) -> str:
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
    thread_id, ns, parent_id = cfg(config)
    k = ctx.keys
    values = checkpoint["channel_values"]
    meta = get_serializable_checkpoint_metadata(config, metadata)
    doc = codec.make_doc(ctx.serde, ns, checkpoint, meta, parent_id)
    fields: list[Any] = []
    for channel, version in new_versions.items():
        typed = ctx.serde.dumps_typed(values[channel]) if channel in values else (codec.EMPTY, b"")
        fields += [codec.blob_field(ns, channel, version), codec.encode_typed(typed)]
    ttl_keys = k.ttl_keys(thread_id) if ctx.ttl_s else ()
    run_id = doc.run_id or ""
    tid = escape(thread_id)
    glob = () if ctx.cluster else (k.threads(), k.thread_ids(), k.run(run_id))
    keys = (k.checkpoints(thread_id), k.blobs(thread_id), k.run_ids(thread_id), k.fence(thread_id))
    args = (
        codec.checkpoint_prefix(ns, doc.checkpoint_id),
        codec.encode_doc(doc),
        _fence(config),
        run_id,
        ctx.ttl_s or "",
        len(ttl_keys),
        "0" if ctx.cluster else "1",
        now_ms,
        tid,
        *fields,
    )
    (flags,) = yield Batch([script("put", (*keys, *ttl_keys, *glob), args)])
    if ctx.cluster and flags:
        cmds: list[Command] = []
        if flags & 1:
            cmds += [("ZADD", k.threads(), "NX", now_ms, tid), ("ZADD", k.thread_ids(), 0, tid)]
        if flags & 2:
            cmds.append(("SADD", k.run(run_id), tid))
        yield Batch(cmds)
    return tuple_config(thread_id, ns, doc.checkpoint_id)


def put_writes(
    ctx: Ctx,
    config: RunnableConfig,
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str,
) -> Op[None]:
    thread_id, ns, cid = cfg(config)
    if cid is None:
        raise ValueError("put_writes needs a config with a checkpoint_id")
    if not writes:
        return None
    prefix = codec.checkpoint_prefix(ns, cid)
    args: list[Any] = [_fence(config), ctx.ttl_s or "", prefix + f"{task_id}\x00".encode()]
    for idx, (channel, value) in enumerate(writes):
        widx = WRITES_IDX_MAP.get(channel, idx)
        head, member = codec.encode_write(ctx.serde, prefix, task_id, widx, channel, value, task_path)
        args += ["1" if widx < 0 else "0", head, member]
    k = ctx.keys
    yield Batch([script("put_writes", (k.writes(thread_id), k.fence(thread_id)), args)])
    return None


# --- reading ---------------------------------------------------------------


def decode(ctx: Ctx, raw: bytes, thread_id: str) -> Doc:
    return codec.decode_doc(raw, key=ctx.keys.checkpoints(thread_id))


def _assemble(
    ctx: Ctx,
    thread_id: str,
    doc: Doc,
    checkpoint: Checkpoint,
    blob_values: Sequence[bytes | None],
    write_members: list[bytes],
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
        for w in codec.decode_writes(write_members, key=wkey)
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
    return codec.load_checkpoint(ctx.serde, doc, key=ctx.keys.checkpoints(thread_id))


def _load(
    ctx: Ctx, thread_id: str, docs: list[Doc], writes: list[list[bytes]] | None
) -> Op[list[CheckpointTuple]]:
    """The tuples of ``docs``: one round trip for their blobs (and writes, if not given)."""
    if not docs:
        return []
    k = ctx.keys
    cps = [load_checkpoint(ctx, thread_id, d) for d in docs]
    fields = [
        codec.blob_field(d.ns, ch, v)
        for d, cp in zip(docs, cps, strict=True)
        for ch, v in cp["channel_versions"].items()
    ]
    cmds: list[Command] = []
    if writes is None:
        wkey = k.writes(thread_id)
        for d in docs:
            prefix = codec.checkpoint_prefix(d.ns, d.checkpoint_id)
            cmds.append(("ZRANGEBYLEX", wkey, b"[" + prefix, upper(prefix)))
    if fields:
        cmds.append(("HMGET", k.blobs(thread_id), *fields))
    replies = (yield Batch(cmds)) if cmds else []
    if writes is None:
        writes = replies[: len(docs)]
    blob_values: list[bytes | None] = list(replies[-1]) if fields else []
    out: list[CheckpointTuple] = []
    offset = 0
    for doc, cp, members in zip(docs, cps, writes, strict=True):
        n = len(cp["channel_versions"])
        out.append(
            _assemble(ctx, thread_id, doc, cp, blob_values[offset : offset + n], members)
        )
        offset += n
    return out


def get_tuple(ctx: Ctx, config: RunnableConfig) -> Op[CheckpointTuple | None]:
    """Two round trips: the checkpoint with its writes (one script call), then its blobs."""
    thread_id, ns, cid = cfg(config)
    k = ctx.keys
    keys = (k.checkpoints(thread_id), k.writes(thread_id), k.legacy_namespaces(thread_id))
    ((raw, extra),) = yield Batch([script("read", keys, (codec.ns_prefix(ns), cid or ""))])
    if raw is None:
        if extra:
            raise LegacyThread(thread_id)
        return None
    tuples = yield from _load(ctx, thread_id, [decode(ctx, raw, thread_id)], [extra])
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
    """One page of a namespace, newest first: two round trips per page."""
    k = ctx.keys
    if only_id is not None:
        if before_id is not None and only_id >= before_id:
            return Page([], None, True)
        config = tuple_config(thread_id, ns, only_id)
        one = yield from get_tuple(ctx, config)
        if one is None or (filter and not _matches(one.metadata, filter)):
            return Page([], None, True)
        return Page([one], only_id, True)
    pfx = codec.ns_prefix(ns)
    hi = b"(" + codec.checkpoint_prefix(ns, before_id) if before_id else upper(pfx)
    (found,) = yield Batch(
        [("ZREVRANGEBYLEX", k.checkpoints(thread_id), hi, b"[" + pfx, "LIMIT", 0, size)]
    )
    docs = [decode(ctx, raw, thread_id) for raw in found]
    if not docs:
        return Page([], None, True)
    last_id = docs[-1].checkpoint_id
    if filter:
        key = k.checkpoints(thread_id)
        docs = [d for d in docs if _matches(codec.load_metadata(ctx.serde, d, key=key), filter)]
    tuples = yield from _load(ctx, thread_id, docs, None)
    return Page(tuples, last_id, len(found) < size)


def _matches(metadata: CheckpointMetadata, filter: dict[str, Any]) -> bool:
    return all(metadata.get(key) == value for key, value in filter.items())


def namespaces(ctx: Ctx, thread_id: str) -> Op[list[str]]:
    (found,) = yield Batch([script("namespaces", (ctx.keys.checkpoints(thread_id),), ())])
    if not found:
        (legacy,) = yield Batch([("EXISTS", ctx.keys.legacy_namespaces(thread_id))])
        if legacy:
            raise LegacyThread(thread_id)
    return [unescape(text(ns)) for ns in found]


def thread_id_page(
    ctx: Ctx, after: str | None, size: int
) -> Op[tuple[list[str], str | None]]:
    """Thread ids with checkpoints in id order after ``after`` (stable under writes), and
    the cursor of the next page (None at the end)."""
    lo = "(" + escape(after) if after is not None else "-"
    (rows,) = yield Batch([("ZRANGEBYLEX", ctx.keys.thread_ids(), lo, "+", "LIMIT", 0, size)])
    ids = [text(r) for r in rows]
    live = yield from _sweep(ctx, ids, ctx.keys.thread_ids())
    cursor = unescape(ids[-1]) if len(ids) == size else None
    return [unescape(i) for i in ids if i in live], cursor


def all_threads(ctx: Ctx) -> Op[list[tuple[str, float]]]:
    """Every thread id with its last activity time (ms), most recent first."""
    (rows,) = yield Batch([("ZREVRANGE", ctx.keys.threads(), 0, -1, "WITHSCORES")])
    live = yield from _sweep(ctx, [text(m) for m, _ in rows], ctx.keys.threads())
    return [(unescape(text(m)), float(s)) for m, s in rows if text(m) in live]


def _sweep(ctx: Ctx, escaped: list[str], index: str) -> Op[set[str]]:
    """The ids whose thread still exists; index entries of expired threads are removed."""
    if not escaped:
        return set()
    k = ctx.keys
    replies = yield Batch(
        [("EXISTS", k.checkpoints(unescape(e)), k.meta(unescape(e))) for e in escaped]
    )
    gone = [e for e, n in zip(escaped, replies, strict=True) if not n]
    if gone:
        yield Batch([("ZREM", index, *gone)])
    return set(escaped) - set(gone)


# --- listing ---------------------------------------------------------------

PAGE = 64
Listing = Generator[Batch | list[CheckpointTuple], Any, None]


def listing(
    ctx: Ctx,
    config: RunnableConfig | None,
    *,
    filter: dict[str, Any] | None,
    before_id: str | None,
    limit: int | None,
    nss: list[str] | None = None,
) -> Listing:
    """Yields batches to answer and, between them, pages of tuples to pass on: threads,
    namespaces and checkpoints are all read a page at a time. ``nss``: the thread's
    namespaces when the caller has read them already."""
    left = [limit]
    only = config["configurable"].get("checkpoint_id") if config else None
    if config is not None:
        thread_id = str(config["configurable"]["thread_id"])
        ns = config["configurable"].get("checkpoint_ns")
        if ns is not None:
            nss = [ns]
        for one in nss if nss is not None else (yield from namespaces(ctx, thread_id)):
            yield from _list_ns(ctx, thread_id, one, before_id, only, filter, left)
            if left[0] is not None and left[0] <= 0:
                return
        return
    after: str | None = None
    while True:
        ids, after = yield from thread_id_page(ctx, after, PAGE)
        for thread_id in ids:
            for one in (yield from namespaces(ctx, thread_id)):
                yield from _list_ns(ctx, thread_id, one, before_id, None, filter, left)
                if left[0] is not None and left[0] <= 0:
                    return
        if after is None:
            return


def _list_ns(
    ctx: Ctx,
    thread_id: str,
    ns: str,
    cursor: str | None,
    only: str | None,
    filter: dict[str, Any] | None,
    left: list[int | None],
) -> Listing:
    while left[0] is None or left[0] > 0:
        remaining = left[0]
        size = min(remaining, PAGE) if remaining is not None else PAGE
        page = yield from list_page(
            ctx, thread_id, ns, before_id=cursor, size=size, only_id=only, filter=filter
        )
        tuples = page.tuples if remaining is None else page.tuples[:remaining]
        if tuples:
            yield tuples
            if remaining is not None:
                left[0] = remaining - len(tuples)
        if page.exhausted:
            return
        cursor = page.last_id
