"""This process's figures for `/metrics`.

HTTP requests by route and status with their latency, and how long the runs it executed took.
Cluster-wide figures come from Redis (`extras/queue_stats.py`); both are rendered by
`http/routes/metrics.py`.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from starlette.types import ASGIApp, Message, Receive, Scope, Send

# The reference's latency buckets (langgraph_api.http_metrics_utils), in milliseconds as
# its Prometheus exporter shows them; an overflow bucket (+Inf) follows.
BUCKETS_MS = (
    10.0,
    100.0,
    500.0,
    1000.0,
    5000.0,
    15000.0,
    30000.0,
    60000.0,
    120000.0,
    300000.0,
    600000.0,
    1800000.0,
    3600000.0,
)
# Routes the reference leaves out of its HTTP figures: probes and the scrape itself.
UNCOUNTED = ("/ok", "/info", "/metrics", "/docs", "/openapi.json")
MAX_SERIES = 5000  # distinct (method, route, status): past it, new ones are not counted


@dataclass
class Histogram:
    """Counts per bucket (not cumulative), their sum and count, safe across threads."""

    counts: list[int] = field(default_factory=lambda: [0] * (len(BUCKETS_MS) + 1))
    total: float = 0.0
    count: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def observe(self, value_ms: float) -> None:
        with self._lock:
            self.counts[bisect.bisect_left(BUCKETS_MS, value_ms)] += 1
            self.total += value_ms
            self.count += 1

    def cumulative(self) -> list[tuple[str, float]]:
        """`(le, count)` pairs as Prometheus wants them: each bucket counts all below it."""
        with self._lock:
            counts = list(self.counts)
        bounds = [*(repr(b) for b in BUCKETS_MS), "+Inf"]
        running, out = 0, []
        for bound, n in zip(bounds, counts, strict=True):
            running += n
            out.append((bound, float(running)))
        return out


@dataclass
class HttpFigures:
    """Requests answered by this process.

    A count per (method, route, status) and a latency histogram per (method, route), the route as
    its template (`/threads/{thread_id}`).
    """

    requests: dict[tuple[str, str, int], int] = field(default_factory=dict)
    latency: dict[tuple[str, str], Histogram] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, method: str, route: str, status: int, latency_ms: float) -> None:
        if route.endswith(UNCOUNTED):
            return
        with self._lock:
            key = (method, route, status)
            if key not in self.requests and len(self.requests) >= MAX_SERIES:
                return
            self.requests[key] = self.requests.get(key, 0) + 1
            histogram = self.latency.setdefault((method, route), Histogram())
        histogram.observe(latency_ms)

    def counts(self) -> Iterator[tuple[tuple[str, str, int], int]]:
        with self._lock:
            found = list(self.requests.items())
        yield from found

    def histograms(self) -> Iterator[tuple[tuple[str, str], Histogram]]:
        with self._lock:
            found = list(self.latency.items())
        yield from found


class CountRequests:
    """ASGI middleware.

    Every HTTP request's method, matched route, status and latency into `figures`; a request no
    route matched (a 404) is not counted, as in the reference.
    """

    def __init__(self, app: ASGIApp, figures: HttpFigures) -> None:
        self.app = app
        self.figures = figures

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        began, status = time.monotonic(), 0

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            route = getattr(scope.get("route"), "path", None)
            if route is not None and status:
                elapsed_ms = (time.monotonic() - began) * 1000
                self.figures.record(scope["method"], str(route), status, elapsed_ms)
