"""Listing: checkpoints a page at a time, namespaces, and the threads of the indexes.

Every listing reads a bounded page per round trip, so `alist` streams and a cursor
(a checkpoint id, a thread id) never skips or repeats what writes move meanwhile.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointMetadata, CheckpointTuple

from graphwright.checkpoints import codec
from graphwright.checkpoints.keys import escape, unescape
from graphwright.checkpoints.ops import (
    Batch,
    Ctx,
    LegacyThread,
    Op,
    decode,
    get_tuple,
    load_tuples,
    script,
    text,
    tuple_config,
    upper,
)


@dataclass(frozen=True)
class Page:
    """One page of `list`: its tuples, the id to continue after, whether the thread is done."""

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
    """One page of a namespace, newest first: four round trips per page."""
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
    tuples = yield from load_tuples(ctx, thread_id, docs, None)
    return Page(tuples, last_id, len(found) < size)


def _matches(metadata: CheckpointMetadata, filter: dict[str, Any]) -> bool:
    return all(metadata.get(key) == value for key, value in filter.items())


def namespaces(ctx: Ctx, thread_id: str) -> Op[list[str]]:
    """The thread's checkpoint namespaces (root and subgraphs), from either layout."""
    (found,) = yield Batch([script("namespaces", (ctx.keys.checkpoints(thread_id),), ())])
    if not found:
        (legacy,) = yield Batch([("EXISTS", ctx.keys.legacy_namespaces(thread_id))])
        if legacy:
            raise LegacyThread(thread_id)
    return [unescape(text(ns)) for ns in found]


def thread_id_page(ctx: Ctx, after: str | None, size: int) -> Op[tuple[list[str], str | None]]:
    """Thread ids with checkpoints in id order after `after`, and the next page's cursor.

    The order is stable under writes; the cursor is None at the end.
    """
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
    """Yields batches to answer and, between them, pages of tuples to pass on.

    Threads, namespaces and checkpoints are all read a page at a time. `nss`: the thread's
    namespaces when the caller has read them already.
    """
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
