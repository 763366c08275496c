"""Cluster-wide run figures read from Redis for `/metrics`.

Runs waiting on the queue and how long they have waited, runs taken by workers, threads by status.
Every API process answers the same, whatever runs it executes itself.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any

import redis

from graphwright.checkpoints.keys import Keys
from graphwright.server.aio import AsyncClient
from graphwright.server.records.run_store import GROUP

THREAD_STATUSES = ("idle", "busy", "interrupted", "error")
WAITS_READ = 1000  # undelivered entries read for the wait times: the oldest ones


@dataclass(frozen=True, kw_only=True)
class QueueStats:
    """The reference's `queue` figures (`Runs.stats`) and graphwright's own beside them."""

    n_pending: int  # on the queue, taken by no worker yet
    n_running: int  # threads busy with a run, wherever it executes
    wait_max_s: float | None
    wait_med_s: float | None
    taken: int  # queue entries a worker holds (delivered, not yet done)
    delayed: int  # runs due later (after_seconds, a busy thread's retry) and local leases
    threads: dict[str, int]  # threads by API status

    def reference_json(self) -> dict[str, Any]:
        """The `queue` object of the reference's `/metrics?format=json`.

        The queue holds only runs ready to start (one whose thread is busy waits on the delayed
        set), so the unblocked runs' longest wait is the longest wait.
        """
        return {
            "n_pending": self.n_pending,
            "pending_runs_wait_time_max_secs": self.wait_max_s,
            "pending_runs_wait_time_med_secs": self.wait_med_s,
            "pending_unblocked_runs_wait_time_max_secs": self.wait_max_s,
            "n_running": self.n_running,
        }


def _entry_ms(entry_id: bytes | str) -> int:
    text = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
    return int(text.split("-", 1)[0])


async def _group(client: AsyncClient, queue: str) -> tuple[int, str]:
    """Entries delivered to a worker and not yet done, and the last id delivered."""
    try:
        groups: list[dict[str, Any]] = await client.xinfo_groups(queue)
    except redis.ResponseError as exc:  # no stream yet: nothing queued, nothing taken
        if "no such key" in str(exc).lower():
            return 0, "0-0"
        raise
    for group in groups:
        name = group.get("name")
        if (name.decode() if isinstance(name, bytes) else name) == GROUP:
            last = group.get("last-delivered-id") or b"0-0"
            return int(group.get("pending") or 0), last.decode() if isinstance(
                last, bytes
            ) else last
    return 0, "0-0"


async def read(client: AsyncClient, keys: Keys, delayed_key: str) -> QueueStats:
    """Every figure in a few reads, none of them a scan of all runs."""
    queue = keys.queue()
    taken, last = await _group(client, queue)
    length = int(await client.xlen(queue))
    waiting: Any = (
        await client.xrange(queue, min=f"({last}", count=WAITS_READ) if length > taken else []
    )
    now_ms = time.time() * 1000
    waits = [max(now_ms - _entry_ms(entry_id), 0.0) / 1000 for entry_id, _ in waiting]
    threads = {
        status: int(await client.scard(keys.threads_with_status(status)))
        for status in THREAD_STATUSES
    }
    return QueueStats(
        n_pending=max(length - taken, 0),
        n_running=threads["busy"],
        wait_max_s=max(waits) if waits else None,
        wait_med_s=statistics.median(waits) if waits else None,
        taken=taken,
        delayed=int(await client.zcard(delayed_key)),
        threads=threads,
    )
