"""DeltaChannel history: the parent chain of one checkpoint, read only as far as needed.

The chain is read in pages, newest first, from the target down (its ancestors have
smaller ids); the walk follows parent ids and stops at the page where every channel
has found its seed, the nearest ancestor that stores a value for it. Then one round
trip reads the writes of the chain down to the deepest seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import DeltaChannelHistory

from graphwright.checkpoints import codec
from graphwright.checkpoints.codec import Doc
from graphwright.checkpoints.ops import (
    Batch,
    Ctx,
    Op,
    cfg,
    decode,
    load_checkpoint,
    read_writes,
    upper,
)

PAGE = 64


def delta_channel_history(
    ctx: Ctx, config: RunnableConfig, channels: Sequence[str]
) -> Op[dict[str, DeltaChannelHistory]]:
    """The stored updates of each delta channel back to its last snapshot.

    What LangGraph replays to rebuild a DeltaChannel's value at `config`'s checkpoint.
    """
    if not channels:
        return {}
    thread_id, ns, cid = cfg(config)
    k = ctx.keys
    pfx = codec.ns_prefix(ns)
    bound = upper(codec.checkpoint_prefix(ns, cid)) if cid else upper(pfx)
    chain: list[Doc] = []
    seeds: dict[str, tuple[int, Any]] = {}
    cursor: str | None = None
    started = False
    while True:
        (found,) = yield Batch(
            [("ZREVRANGEBYLEX", k.checkpoints(thread_id), bound, b"[" + pfx, "LIMIT", 0, PAGE)]
        )
        docs = [decode(ctx, raw, thread_id) for raw in found]
        if not started:
            if not docs or (cid and docs[0].checkpoint_id != cid):
                break
            cursor, started = docs[0].parent_id, True
        page_chain: list[Doc] = []
        for doc in docs:
            if doc.checkpoint_id == cursor:
                page_chain.append(doc)
                cursor = doc.parent_id
        first = len(chain)
        chain += page_chain
        yield from _find_seeds(ctx, thread_id, chain, first, channels, seeds)
        if len(seeds) == len(channels) or cursor is None or len(found) < PAGE:
            break
        bound = b"(" + found[-1]
    return (yield from _histories(ctx, thread_id, chain, channels, seeds))


def _find_seeds(
    ctx: Ctx,
    thread_id: str,
    chain: list[Doc],
    first: int,
    channels: Sequence[str],
    seeds: dict[str, tuple[int, Any]],
) -> Op[None]:
    """Record, for channels without one, the nearest ancestor that stores a value.

    Ancestors are searched in `chain[first:]`.
    """
    k = ctx.keys
    wanted = [
        (i, ch, codec.blob_field(chain[i].ns, ch, versions[ch]))
        for i in range(first, len(chain))
        for versions in [load_checkpoint(ctx, thread_id, chain[i])["channel_versions"]]
        for ch in channels
        if ch in versions and ch not in seeds
    ]
    if not wanted:
        return None
    (raws,) = yield Batch([("HMGET", k.blobs(thread_id), *[w[2] for w in wanted])])
    for (i, ch, _), raw in zip(wanted, raws, strict=True):
        if ch in seeds:
            continue
        present, value = codec.load_blob(ctx.serde, raw, key=k.blobs(thread_id))
        if present:
            seeds[ch] = (i, value)
    return None


def _histories(
    ctx: Ctx,
    thread_id: str,
    chain: list[Doc],
    channels: Sequence[str],
    seeds: dict[str, tuple[int, Any]],
) -> Op[dict[str, DeltaChannelHistory]]:
    k = ctx.keys
    # Writes are needed down to the deepest seed (or the root when a channel has none).
    depth = len(chain) if len(seeds) < len(channels) else max(i for i, _ in seeds.values()) + 1
    wkey = k.writes(thread_id)
    replies = yield from read_writes(ctx, thread_id, chain[:depth])
    history: dict[str, DeltaChannelHistory] = {ch: {"writes": []} for ch in channels}
    for i in reversed(range(depth)):
        for w in codec.decode_writes(*replies[i], key=wkey):
            if w.channel in history and (w.channel not in seeds or i <= seeds[w.channel][0]):
                value = codec.load_write(ctx.serde, w, key=wkey)
                history[w.channel]["writes"].append((w.task_id, w.channel, value))
    for ch, (_, value) in seeds.items():
        history[ch]["seed"] = value
    return history
