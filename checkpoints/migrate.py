"""Migrating a thread written by layout 1 to layout 2.

Layout 1 is a hash, index and head key per namespace and a writes hash per checkpoint; layout 2 a
fixed set of keys per thread.

A saver that finds layout-1 data where it reads a thread migrates that thread in one
atomic batch and reads again; data of any other unknown shape is refused as corrupt.
"""

from __future__ import annotations

from typing import Any

import ormsgpack

from graphwright.checkpoints import codec
from graphwright.checkpoints.codec import Doc
from graphwright.checkpoints.errors import CorruptCheckpointError
from graphwright.checkpoints.keys import escape
from graphwright.checkpoints.ops import Batch, Command, Ctx, Op, text

CHUNK = 1000


def _old_doc(raw: bytes, ns: str, key: str) -> Doc:
    try:
        cid, parent, ctype, cbytes, mtype, mbytes = ormsgpack.unpackb(raw)
    except (ormsgpack.MsgpackDecodeError, ValueError, TypeError) as exc:
        raise CorruptCheckpointError(f"corrupt layout-1 checkpoint at key {key!r}: {exc}") from exc
    return Doc(
        ns=ns,
        checkpoint_id=str(cid),
        parent_id=parent,
        checkpoint=cbytes,
        checkpoint_type=ctype,
        metadata=mbytes,
        metadata_type=mtype,
    )


def migrate_thread(ctx: Ctx, thread_id: str) -> Op[None]:
    """Rewrite one layout-1 thread in layout 2 and remove its layout-1 keys."""
    k = ctx.keys
    (members,) = yield Batch([("SMEMBERS", k.legacy_namespaces(thread_id))])
    nss = sorted(text(m) for m in members)
    replies = yield Batch(
        [
            c
            for ns in nss
            for c in (
                ("HGETALL", k.legacy_checkpoints(thread_id, ns)),
                ("HGETALL", k.legacy_blobs(thread_id, ns)),
            )
        ]
    )
    docs: list[Doc] = []
    cmds: list[Command] = []
    old_keys: list[str] = [k.legacy_namespaces(thread_id)]
    for i, ns in enumerate(nss):
        key = k.legacy_checkpoints(thread_id, ns)
        for raw in replies[2 * i].values():
            docs.append(_doc_with_metadata(ctx, _old_doc(raw, ns, key)))
        blobs: dict[bytes, bytes] = replies[2 * i + 1]
        pairs = [x for f, v in blobs.items() for x in (f"{escape(ns)}\x00{text(f)}", v)]
        cmds += [
            ("HSET", k.blobs(thread_id), *pairs[j : j + 2 * CHUNK])
            for j in range(0, len(pairs), 2 * CHUNK)
        ]
        old_keys += [key, k.legacy_blobs(thread_id, ns)]
        old_keys += [f"{k.thread_tag(thread_id)}:{escape(ns)}:{s}" for s in ("head", "idx")]
    writes = yield Batch(
        [("HGETALL", k.legacy_writes(thread_id, d.ns, d.checkpoint_id)) for d in docs]
    )
    new_writes: list[tuple[bytes, bytes]] = []
    for doc, raw_writes in zip(docs, writes, strict=True):
        old_keys.append(k.legacy_writes(thread_id, doc.ns, doc.checkpoint_id))
        prefix = codec.checkpoint_prefix(doc.ns, doc.checkpoint_id)
        for field, value in raw_writes.items():
            task_id, channel, type_, data, task_path = ormsgpack.unpackb(value)
            idx = text(field).rpartition("\x00")[2]
            field = prefix + f"{task_id}\x00{idx}".encode()
            new_writes.append((field, ormsgpack.packb([channel, type_, data, task_path])))
    run_ids = sorted({d.run_id for d in docs if d.run_id})
    old_keys += [f"{k.thread_tag(thread_id)}:run:{escape(r)}" for r in run_ids]
    members_cp = [codec.encode_doc(d) for d in docs]
    index = [f for f, _ in new_writes]
    for key, items in ((k.checkpoints(thread_id), members_cp), (k.write_index(thread_id), index)):
        for j in range(0, len(items), CHUNK):
            cmds.append(("ZADD", key, *[x for m in items[j : j + CHUNK] for x in (0, m)]))
    pairs = [x for kv in new_writes for x in kv]
    cmds += [
        ("HSET", k.writes(thread_id), *pairs[j : j + 2 * CHUNK])
        for j in range(0, len(pairs), 2 * CHUNK)
    ]
    if run_ids:
        cmds.append(("SADD", k.run_ids(thread_id), *run_ids))
    cmds += [("DEL", *old_keys[j : j + CHUNK]) for j in range(0, len(old_keys), CHUNK)]
    cmds += [
        ("SREM", k.registry(thread_id), *old_keys[j : j + CHUNK])
        for j in range(0, len(old_keys), CHUNK)
    ]
    yield Batch(cmds, atomic=True)
    yield Batch([("ZADD", k.thread_ids(), 0, escape(thread_id))])
    return None


def _doc_with_metadata(ctx: Ctx, doc: Doc) -> Doc:
    """Layout-1 documents lack the delta flag and run id layout 2 keeps beside them."""
    meta: dict[str, Any] = codec.load_metadata(ctx.serde, doc, key="layout-1 metadata")  # type: ignore[assignment]  # a TypedDict read as a dict
    run_id = meta.get("run_id")
    return Doc(
        **{
            **doc.__dict__,
            "delta": "counters_since_delta_snapshot" in meta,
            "run_id": str(run_id) if run_id else None,
        }
    )
