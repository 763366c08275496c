"""`/metrics`.

The reference's figures as Prometheus text (`?format=json`: its JSON snapshot), from this process
(HTTP, run latency, its run slots, its Redis pool) and from Redis where they must hold for the whole
cluster (queue depth and waits, threads by status).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

from graphwright.server.extras import queue_stats
from graphwright.server.extras.process_metrics import Histogram, HttpFigures
from graphwright.server.extras.queue_stats import QueueStats
from graphwright.server.http.deps import Service, service

router = APIRouter(tags=["system"])
Figures = dict[str, Any]


def pool_stats(client: Any) -> dict[str, int] | None:
    """The reference's `redis` pool figures for a client on one connection pool.

    None for a cluster or Sentinel client, whose connections are spread over several pools.
    """
    pool = getattr(client, "connection_pool", None)
    idle, in_use = (
        getattr(pool, "_available_connections", None),
        getattr(pool, "_in_use_connections", None),
    )
    if pool is None or idle is None or in_use is None:
        return None
    return {
        "idle_connections": len(idle),
        "in_use_connections": len(in_use),
        "max_connections": int(pool.max_connections),
    }


def workers(svc: Service) -> dict[str, int]:
    """This process's run slots (`serve --jobs`), as the reference counts its workers."""
    jobs = svc.local.jobs
    active = len(jobs.tasks)
    return {"max": jobs.limit, "active": active, "available": max(jobs.limit - active, 0)}


def gauge(name: str, doc: str, value: float | None) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, doc)
    if value is not None:
        family.add_metric([], value)
    return family


def histogram(family: HistogramMetricFamily, labels: list[str], data: Histogram) -> None:
    family.add_metric(labels, data.cumulative(), sum_value=data.total)


def http_families(http: HttpFigures) -> Iterator[Metric]:
    counter = CounterMetricFamily(
        "lg_api_http_requests",
        "Total number of HTTP requests.",
        labels=["method", "path", "status"],
    )
    for (method, path, status), count in http.counts():
        counter.add_metric([method, path, str(status)], count)
    latency = HistogramMetricFamily(
        "lg_api_http_requests_latency",
        "HTTP request latency in milliseconds",
        labels=["method", "path"],
    )
    for (method, path), data in http.histograms():
        histogram(latency, [method, path], data)
    yield from (counter, latency)


def run_families(figures: Figures) -> Iterator[Metric]:
    stats: QueueStats = figures["queue"]
    yield gauge("lg_api_num_pending_runs", "The number of runs currently pending.", stats.n_pending)
    yield gauge("lg_api_num_running_runs", "The number of runs currently running.", stats.n_running)
    yield gauge(
        "lg_api_pending_runs_wait_time_max",
        "The maximum time a run has been pending, in seconds",
        stats.wait_max_s,
    )
    yield gauge(
        "lg_api_pending_runs_wait_time_med",
        "The median pending wait time across runs, in seconds",
        stats.wait_med_s,
    )
    yield gauge(
        "lg_api_pending_unblocked_runs_wait_time_max",
        "The maximum time a run has been pending excluding runs blocked by another run "
        "on the same thread, in seconds",
        stats.wait_max_s,
    )
    yield gauge(
        "graphwright_queue_taken", "Queue entries a worker holds (taken, not done).", stats.taken
    )
    yield gauge(
        "graphwright_queue_delayed",
        "Runs due later (after_seconds, a busy thread's "
        "retry) and leases of runs the API processes execute.",
        stats.delayed,
    )
    threads = GaugeMetricFamily(
        "graphwright_threads", "Threads by status, cluster-wide.", labels=["status"]
    )
    for status, count in stats.threads.items():
        threads.add_metric([status], count)
    yield threads
    latency = HistogramMetricFamily(
        "lg_api_run_execution_latency", "Time (milliseconds) runs executed by this process took"
    )
    histogram(latency, [], figures["runs"])
    yield latency


def process_families(figures: Figures) -> Iterator[Metric]:
    found = figures["workers"]
    for key in ("max", "active", "available"):
        yield gauge(f"lg_api_workers_{key}", f"Run slots of this process: {key}", found[key])
    pool = figures.get("redis")
    if pool is not None:
        yield gauge(
            "lg_api_redis_pool_max",
            "The maximum size of the redis connection pool.",
            pool["max_connections"],
        )
        yield gauge(
            "lg_api_redis_pool_size",
            "Number of connections currently in use in the redis connection pool",
            pool["in_use_connections"],
        )
        yield gauge(
            "lg_api_redis_pool_available",
            "Number of connections currently idle in the redis connection pool",
            pool["idle_connections"],
        )


class Snapshot(Collector):
    """The families of one scrape, gathered before rendering (the reads are async)."""

    def __init__(self, families: Iterable[Metric]) -> None:
        self.families = list(families)

    def collect(self) -> Iterable[Metric]:
        return self.families


async def gather(request: Request) -> Figures:
    svc = service(request)
    stats = await queue_stats.read(svc.aio(), svc.orch.keys, svc.store.delayed())
    return {
        "queue": stats,
        "workers": workers(svc),
        "redis": pool_stats(svc.orch.client),
        "runs": svc.local.jobs.times,
        "http": request.app.state.http_figures,
    }


def prometheus_text(figures: Figures) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    for collector in (ProcessCollector, PlatformCollector, GCCollector):
        collector(registry=registry)
    families = [*http_families(figures["http"]), *run_families(figures), *process_families(figures)]
    registry.register(Snapshot(families))
    return generate_latest(registry)


def reference_json(figures: Figures) -> dict[str, Any]:
    """The reference's JSON snapshot key by key: pool, queue, HTTP counts, workers."""
    http: HttpFigures = figures["http"]
    body: dict[str, Any] = {} if figures["redis"] is None else {"redis": figures["redis"]}
    body["queue"] = figures["queue"].reference_json()
    body["api"] = {
        "http_requests_total": [
            {"method": method, "path": path, "status": status, "count": count}
            for (method, path, status), count in http.counts()
        ]
    }
    body["workers"] = figures["workers"]
    return body


@router.get("/metrics")  # open like /ok, as the reference's: scrapers carry no API key
async def metrics(request: Request, format: str = "prometheus") -> Response:
    """Prometheus text by default; `format=json` the snapshot (any other value: text)."""
    figures = await gather(request)
    if format == "json":
        return JSONResponse(reference_json(figures))
    return Response(prometheus_text(figures), media_type=CONTENT_TYPE_LATEST)
