"""The sweeper every worker runs now and then.

A `pending` or `running` run that nobody holds (no queue entry, no delayed entry or lease) goes back
on the queue.

Every run is created with its owner in one step, so this only catches what a crash between
the steps of a cluster, where the queue lives on another slot, or a bug left behind. The
reads are ordered (records, then the delayed set, then the queue) so that a run moving
between them is seen in the later one; what a race still misses is queued twice, which is
harmless: a second entry finds the run ended, or its thread locked, and is dropped or retried.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from typing import Any

from graphwright.checkpoints.keys import unescape
from graphwright.server.records.run_store import RunStore

log = logging.getLogger(__name__)
PAGE = 500


def sweep(store: RunStore, *, now: float | None = None) -> list[tuple[str, str]]:
    """Requeue the runs without an owner; one sweeper at a time (a lease of one window)."""
    window_ms = int(store.claim_window_s * 1000)
    if not store.redis.set(f"{store.keys.queue()}:sweeping", "1", nx=True, px=window_ms):
        return []
    now = time.time() if now is None else now
    candidates = [
        (t, r) for t, r, updated in active_runs(store) if updated < now - store.claim_window_s
    ]
    if not candidates:
        return []
    held = delayed_members(store) | queued(store)
    orphans = [pair for pair in candidates if pair not in held]
    for thread_id, run_id in orphans:
        log.warning("run %s on thread %s had no owner; queued again", run_id, thread_id)
        store.requeue(thread_id, run_id, 0)
    return orphans


def active_runs(store: RunStore) -> Iterator[tuple[str, str, float]]:
    """Every pending or running run: thread, run and when its record last changed."""
    threads = (
        unescape(t.decode()) for t, _ in store.redis.zscan_iter(store.keys.threads(), count=PAGE)
    )
    for thread_id in threads:
        ids: list[bytes] = store.redis.zrange(store.inflight(thread_id), 0, -1)  # type: ignore[assignment]  # bytes client
        for raw in ids:
            run_id = raw.decode()
            got: list[bytes | None] = store.redis.hmget(
                store.keys.run_record(thread_id, run_id),  # type: ignore[assignment]  # bytes client
                ["status", "updated_at"],
            )
            status, updated = got
            if status in (b"pending", b"running"):
                yield thread_id, run_id, float(updated or 0)


def delayed_members(store: RunStore) -> set[tuple[str, str]]:
    """The (thread, run) pairs waiting in the delayed queue."""
    items: list[bytes] = store.redis.zrange(store.delayed(), 0, -1)  # type: ignore[assignment]  # bytes client
    return {(pair[0], pair[1]) for pair in map(json.loads, items)}


def queued(store: RunStore) -> set[tuple[str, str]]:
    """The runs of every entry still on the queue: unread, or read and not acknowledged."""
    found: set[tuple[str, str]] = set()
    start = "-"
    while True:
        page: Any = store.redis.xrange(store.keys.queue(), start, "+", count=PAGE)
        for _entry, fields in page:
            found.add((fields[b"thread_id"].decode(), fields[b"run_id"].decode()))
        if len(page) < PAGE:
            return found
        start = "(" + page[-1][0].decode()
