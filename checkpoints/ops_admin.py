"""The saver's rare operations: delete, delete by run, copy and prune.

They read a whole thread (a few commands on its fixed keys) and then change it in one
atomic batch that names exactly the members it removes, so a checkpoint a run saves
meanwhile is never lost to them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from langgraph.constants import TASKS

from graphwright.checkpoints import codec
from graphwright.checkpoints.codec import Doc
from graphwright.checkpoints.keys import escape, unescape
from graphwright.checkpoints.ops import (
    Batch,
    Command,
    Ctx,
    Op,
    decode,
    load_checkpoint,
    read_writes,
    script,
    text,
    upper,
)

PRUNE_STRATEGIES = ("keep_latest", "delete")
CHUNK = 1000  # members per command in large rewrites, within the script's argument limit


def delete_thread(ctx: Ctx, thread_id: str) -> Op[None]:
    """One atomic script call: the saver's keys, every key in the registry, its index entries."""
    k = ctx.keys
    own = (k.registry(thread_id), *k.saver_keys(thread_id))
    glob = () if ctx.cluster else (k.threads(), k.thread_ids())
    args = (escape(thread_id), len(own), "0" if ctx.cluster else "1")
    yield Batch([script("delete_thread", (*own, *glob), args)])
    if ctx.cluster:
        tid = escape(thread_id)
        yield Batch([("ZREM", k.threads(), tid), ("ZREM", k.thread_ids(), tid)])
    return None


@dataclass
class Thread:
    """Everything the saver keeps of one thread, as read in one round trip."""

    docs: list[Doc]
    raw: dict[str, bytes]  # checkpoint id -> member, to remove exactly that member
    blob_fields: list[str]
    write_fields: list[bytes]

    def by_ns(self) -> dict[str, list[Doc]]:
        out: dict[str, list[Doc]] = {}
        for doc in self.docs:  # members come sorted: by namespace, then by id
            out.setdefault(doc.ns, []).append(doc)
        return out


def read_thread(ctx: Ctx, thread_ids: Sequence[str]) -> Op[list[Thread]]:
    """Every stored part of each thread, in one batch, for export and copying."""
    k = ctx.keys
    cmds: list[Command] = []
    for t in thread_ids:
        cmds += [
            ("ZRANGE", k.checkpoints(t), 0, -1),
            ("HKEYS", k.blobs(t)),
            ("ZRANGE", k.write_index(t), 0, -1),
        ]
    replies = yield Batch(cmds)
    out = []
    for i, t in enumerate(thread_ids):
        members, fields, wfields = replies[3 * i : 3 * i + 3]
        docs = [decode(ctx, m, t) for m in members]
        raw = {f"{d.ns}\x00{d.checkpoint_id}": m for d, m in zip(docs, members, strict=True)}
        out.append(Thread(docs, raw, [text(f) for f in fields], list(wfields)))
    return out


def _fields(ctx: Ctx, thread_id: str, docs: Sequence[Doc]) -> set[str]:
    """The blob fields the given checkpoints read."""
    return {
        codec.blob_field(d.ns, ch, v)
        for d in docs
        for ch, v in load_checkpoint(ctx, thread_id, d)["channel_versions"].items()
    }


def _drop(ctx: Ctx, thread_id: str, thread: Thread, docs: Sequence[Doc]) -> list[Command]:
    """Commands removing checkpoints and their writes."""
    k = ctx.keys
    members = [thread.raw[f"{d.ns}\x00{d.checkpoint_id}"] for d in docs]
    cmds: list[Command] = [
        ("ZREM", k.checkpoints(thread_id), *members[i : i + CHUNK])
        for i in range(0, len(members), CHUNK)
    ]
    prefixes = tuple(codec.checkpoint_prefix(d.ns, d.checkpoint_id) for d in docs)
    return cmds + _drop_writes(ctx, thread_id, thread, prefixes)


def _drop_writes(
    ctx: Ctx, thread_id: str, thread: Thread, prefixes: tuple[bytes, ...]
) -> list[Command]:
    """Commands removing the writes whose fields start with one of `prefixes`."""
    k = ctx.keys
    fields = [f for f in thread.write_fields if f.startswith(prefixes)]
    out: list[Command] = []
    for i in range(0, len(fields), CHUNK):
        chunk = fields[i : i + CHUNK]
        out += [("HDEL", k.writes(thread_id), *chunk), ("ZREM", k.write_index(thread_id), *chunk)]
    return out


def _hdel(key: str, fields: Sequence[str]) -> list[Command]:
    ordered = sorted(fields)
    return [("HDEL", key, *ordered[i : i + CHUNK]) for i in range(0, len(ordered), CHUNK)]


def delete_for_runs(ctx: Ctx, run_ids: Sequence[str]) -> Op[None]:
    """Remove the checkpoints the runs wrote, their writes and the blobs only they read."""
    k = ctx.keys
    for run_id in run_ids:
        (members,) = yield Batch([("SMEMBERS", k.run(run_id))])
        for thread_id in sorted(unescape(text(m)) for m in members):
            (thread,) = yield from read_thread(ctx, [thread_id])
            gone = [d for d in thread.docs if d.run_id == run_id]
            kept = [d for d in thread.docs if d.run_id != run_id]
            if not kept:
                yield from _delete_saved(ctx, thread_id)
                continue
            freed = _fields(ctx, thread_id, gone) - _fields(ctx, thread_id, kept)
            cmds = _drop(ctx, thread_id, thread, gone) + _hdel(k.blobs(thread_id), list(freed))
            cmds.append(("SREM", k.run_ids(thread_id), run_id))
            yield Batch(cmds, atomic=True)
        yield Batch([("DEL", k.run(run_id))])
    return None


def _delete_saved(ctx: Ctx, thread_id: str) -> Op[None]:
    """The saver's part of a thread (not the other keys in its registry)."""
    k = ctx.keys
    tid = escape(thread_id)
    yield Batch([("DEL", *k.saver_keys(thread_id))])
    yield Batch([("ZREM", k.thread_ids(), tid)])
    return None


def copy_thread(ctx: Ctx, source: str, target: str, now_ms: int) -> Op[None]:
    """Every checkpoint, blob and write of `source` into `target`, in one atomic batch.

    As the Agent Server's copy, the copy's checkpoint metadata names `target`
    (`_retarget`). Nothing else carries the thread id, so blobs and writes are copied
    byte for byte: sealed, they are bound to the checkpoint place, not to a thread's keys
    (`graphwright.checkpoints.sealed_serde`), and open under `target` as they are.
    """
    k = ctx.keys
    cp, blobs, writes, index, rids = yield Batch(
        [
            ("ZRANGE", k.checkpoints(source), 0, -1),
            ("HGETALL", k.blobs(source)),
            ("HGETALL", k.writes(source)),
            ("ZRANGE", k.write_index(source), 0, -1),
            ("SMEMBERS", k.run_ids(source)),
        ]
    )
    if not cp:
        return None
    cp = [_retarget(ctx, m, source, target) for m in cp]
    cmds: list[Command] = []
    for key, members in ((k.checkpoints(target), cp), (k.write_index(target), index)):
        for i in range(0, len(members), CHUNK):
            cmds.append(("ZADD", key, *[x for m in members[i : i + CHUNK] for x in (0, m)]))
    for key, mapping in ((k.blobs(target), blobs), (k.writes(target), writes)):
        pairs = [x for kv in mapping.items() for x in kv]
        cmds += [("HSET", key, *pairs[i : i + 2 * CHUNK]) for i in range(0, len(pairs), 2 * CHUNK)]
    if rids:
        cmds.append(("SADD", k.run_ids(target), *rids))
    if ctx.ttl_s:
        cmds += [("EXPIRE", key, ctx.ttl_s) for key in k.ttl_keys(target)]
    tid = escape(target)
    glob: list[Command] = [
        ("ZADD", k.threads(), "NX", now_ms, tid),
        ("ZADD", k.thread_ids(), 0, tid),
    ]
    glob += [("SADD", k.run(text(r)), tid) for r in rids]
    if ctx.cluster:
        yield Batch(cmds, atomic=True)
        yield Batch(glob)
    else:
        yield Batch(cmds + glob, atomic=True)
    return None


def _retarget(ctx: Ctx, member: bytes, source: str, target: str) -> bytes:
    """A checkpoint member of `source` for `target`.

    Its metadata's `thread_id` is `target` where it was `source` (re-serialized, so re-sealed under
    the newest key); any other member is kept as it is.
    """
    doc = decode(ctx, member, source)
    meta = codec.load_metadata(ctx.serde, doc, key=ctx.keys.checkpoints(source))
    if meta.get("thread_id") != source:
        return member
    mtype, mbytes = ctx.serde.dumps_typed({**meta, "thread_id": target})
    return codec.encode_doc(replace(doc, metadata=mbytes, metadata_type=mtype))


# --- prune -----------------------------------------------------------------


def prune(ctx: Ctx, thread_ids: Sequence[str], strategy: str) -> Op[None]:
    """Prune each thread by one of `PRUNE_STRATEGIES` (the saver checks which)."""
    if strategy == "delete":
        for thread_id in thread_ids:
            yield from delete_thread(ctx, thread_id)
        return None
    threads = yield from read_thread(ctx, thread_ids)
    delta = [t for t, th in zip(thread_ids, threads, strict=True) if any(d.delta for d in th.docs)]
    if delta:
        raise NotImplementedError(
            f"keep_latest can't prune threads that use a DeltaChannel: {', '.join(sorted(delta))}"
        )
    for thread_id, thread in zip(thread_ids, threads, strict=True):
        sends = yield from _sends_parents(ctx, thread_id, thread)
        cmds = _keep_latest(ctx, thread_id, thread, sends)
        if cmds:
            yield Batch(cmds, atomic=True)
    return None


def _sends_parents(ctx: Ctx, thread_id: str, thread: Thread) -> Op[set[str]]:
    """Parents that heads older than checkpoint format 4 read their pending sends from."""
    old = [
        docs[-1]
        for docs in thread.by_ns().values()
        if docs[-1].parent_id and load_checkpoint(ctx, thread_id, docs[-1]).get("v", 4) < 4
    ]
    if not old:
        return set()
    wkey = ctx.keys.writes(thread_id)
    parents = [d for d in thread.docs if d.checkpoint_id in {o.parent_id for o in old}]
    replies = yield from read_writes(ctx, thread_id, parents)
    return {
        d.checkpoint_id
        for d, per in zip(parents, replies, strict=True)
        if any(w.channel == TASKS for w in codec.decode_writes(*per, key=wkey))
    }


def _keep_latest(ctx: Ctx, thread_id: str, thread: Thread, sends: set[str]) -> list[Command]:
    """Keep each namespace's latest checkpoint (and, before format 4, the parent).

    For checkpoints older than format 4 the parent is kept because pending sends are read from it. A
    subgraph call's namespace goes with the root checkpoint it started from once that one is gone; a
    `checkpointer=True` subgraph's namespace (no task id after a `:`) stays.
    """
    k = ctx.keys
    groups = thread.by_ns()
    root_ids = {d.checkpoint_id for d in groups.get("", [])}
    kept: dict[str, list[Doc]] = {}
    for ns, docs in groups.items():
        head = docs[-1]
        keep = [head]
        keep += [d for d in docs if d.checkpoint_id == head.parent_id and d.checkpoint_id in sends]
        kept[ns] = keep
    root_head = kept[""][0].checkpoint_id if "" in kept else None
    cmds: list[Command] = []
    for ns, docs in groups.items():
        if ":" in ns:
            root = codec.load_metadata(ctx.serde, kept[ns][0], key=k.checkpoints(thread_id))
            started = (root.get("parents") or {}).get("")
            if started in root_ids and started != root_head:
                cmds += _drop_namespace(ctx, thread_id, thread, ns)
                continue
        keep_ids = {d.checkpoint_id for d in kept[ns]}
        gone = [d for d in docs if d.checkpoint_id not in keep_ids]
        if not gone:
            continue
        cmds += _drop(ctx, thread_id, thread, gone)
        freed = _fields(ctx, thread_id, gone) - _fields(ctx, thread_id, kept[ns])
        cmds += _hdel(k.blobs(thread_id), list(freed))
        for doc in kept[ns]:
            if doc.parent_id is not None and doc.parent_id not in keep_ids:
                old = thread.raw[f"{doc.ns}\x00{doc.checkpoint_id}"]
                orphan = Doc(**{**doc.__dict__, "parent_id": None})
                cmds += [
                    ("ZREM", k.checkpoints(thread_id), old),
                    ("ZADD", k.checkpoints(thread_id), 0, codec.encode_doc(orphan)),
                ]
    return cmds


def _drop_namespace(ctx: Ctx, thread_id: str, thread: Thread, ns: str) -> list[Command]:
    k = ctx.keys
    pfx = codec.ns_prefix(ns)
    fields = [f for f in thread.blob_fields if f.encode().startswith(pfx)]
    return [
        ("ZREMRANGEBYLEX", k.checkpoints(thread_id), b"[" + pfx, upper(pfx)),
        *_drop_writes(ctx, thread_id, thread, (pfx,)),
        *_hdel(k.blobs(thread_id), fields),
    ]
