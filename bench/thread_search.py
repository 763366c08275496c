"""Thread search over 10,000 threads by status and metadata.

The Redis index against the scan of every thread it replaced, in one run. Run through `python -m
bench.http --search`.

The threads are written with the Orchestrator (the same writes the HTTP service makes);
each query is answered through the SDK over HTTP and in-process by the index, and
in-process by the old scan (read every thread's metadata and status, then filter).
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from langgraph_sdk import get_sync_client

from graphwright import Orchestrator
from graphwright.server.records.thread_store import Threads
from graphwright.server.schemas.thread_bodies import ThreadSearchBody
from graphwright.thread_index import API_STATUS

STATUSES = (
    ["completed"] * 7 + ["interrupted"] * 2 + ["failed"]
)  # idle 70%, interrupted 20%, error 10%
QUERIES: dict[str, dict[str, Any]] = {
    "status=interrupted": {"status": "interrupted"},
    "metadata user=u7": {"metadata": {"user": "u7"}},
    "status=error + metadata team=t3": {"status": "error", "metadata": {"team": "t3"}},
}


def fill(orch: Orchestrator, n: int) -> None:
    for i in range(n):
        tid = orch.create_thread(f"bench-{i:05d}", {"user": f"u{i % 100}", "team": f"t{i % 7}"})
        orch.update_meta(tid, status=STATUSES[i % len(STATUSES)])


def scan(orch: Orchestrator, query: dict[str, Any], limit: int = 10) -> list[str]:
    """The search before the index: every thread's metadata and status, filtered in Python."""
    out = []
    for info in orch.threads():
        meta = orch.meta(info.thread_id)
        status = API_STATUS.get(orch.status_of(meta) or "", "idle")
        metadata = json.loads(meta.get("metadata") or "{}")
        if query.get("status") and status != query["status"]:
            continue
        if any(metadata.get(k) != v for k, v in (query.get("metadata") or {}).items()):
            continue
        out.append(info.thread_id)
    return out[:limit]


def timed(fn: Callable[[], object], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        out.append(time.perf_counter() - started)
    return out


def run(orch: Orchestrator, url: str, n: int) -> None:
    started = time.perf_counter()
    fill(orch, n)
    print(f"{n} threads written in {time.perf_counter() - started:.1f} s")
    sdk = get_sync_client(url=url, api_key=None)
    threads = Threads(orch)
    print(
        f"{'query (limit 10)':<34}{'HTTP index ms':>15}{'index ms':>10}{'scan ms':>10}"
        f"{'scan/index':>12}"
    )
    for name, query in QUERIES.items():
        body = ThreadSearchBody(limit=10, select=["thread_id", "status", "metadata"], **query)
        found = {t["thread_id"] for t in threads.search(body)}
        if len(found) != 10 or found - set(scan(orch, query, limit=n)):
            raise RuntimeError(f"{name}: the index and the scan disagree")
        http = timed(lambda q=query: sdk.threads.search(limit=10, **q), 30)  # type: ignore[misc]
        index = timed(lambda b=body: threads.search(b), 30)  # type: ignore[misc]
        old = timed(lambda q=query: scan(orch, q), 3)  # type: ignore[misc]
        med = statistics.median
        print(
            f"{name:<34}{med(http) * 1000:>15.1f}{med(index) * 1000:>10.1f}{med(old) * 1000:>10.0f}"
            f"{med(old) / med(index):>11.0f}x"
        )
