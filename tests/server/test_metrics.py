"""`/metrics`: the reference's Prometheus families and JSON snapshot, read with
`prometheus_client`'s own parser; queue figures from Redis, so a second API process on
the same Redis reports the same queue."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from contextlib import ExitStack

import httpx
import pytest
from langgraph_sdk import get_sync_client
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from graphwright import Orchestrator
from graphwright.offline import OfflineChatModel
from graphwright.settings import Settings
from graphwright.testing.redis_servers import Server
from graphwright.testing.service import Service, running
from tests.support.paths import ROOT

KEY = "metrics-key-7f1e"
GRAPHS = "tests.support.protocol_graphs:register"
# Every family the reference's /metrics shows after a run (langgraph dev 0.16.7), with its type.
REFERENCE_FAMILIES = {
    "lg_api_http_requests": "counter",
    "lg_api_http_requests_latency": "histogram",
    "lg_api_workers_max": "gauge",
    "lg_api_workers_active": "gauge",
    "lg_api_workers_available": "gauge",
    "python_gc_objects_collected": "counter",
    "process_resident_memory_bytes": "gauge",
    "python_info": "gauge",
}
QUEUE_KEYS = {
    "n_pending",
    "pending_runs_wait_time_max_secs",
    "pending_runs_wait_time_med_secs",
    "pending_unblocked_runs_wait_time_max_secs",
    "n_running",
}


def families(text: str) -> dict[str, Metric]:
    return {family.name: family for family in text_string_to_metric_families(text)}


def value(family: Metric, suffix: str = "", **labels: str) -> float:
    found = [
        s.value
        for s in family.samples
        if s.name == family.name + suffix and all(s.labels.get(k) == v for k, v in labels.items())
    ]
    assert len(found) == 1, (family.name, suffix, labels, family.samples)
    return found[0]


@pytest.fixture
def two_apis(redis_server: Server) -> Iterator[tuple[Service, Service]]:
    """Two API processes' apps on one Redis and prefix, no worker: queued runs stay queued."""
    settings = Settings(
        _env_file=None,
        REDIS_URL=redis_server.url,  # type: ignore[call-arg]
        GRAPHWRIGHT_KEY_PREFIX=f"m{uuid.uuid4().hex[:8]}",
        GRAPHWRIGHT_GRAPHS=GRAPHS,
    )
    with ExitStack() as stack:
        apis = [
            stack.enter_context(
                running(
                    Orchestrator(settings=settings, model=OfflineChatModel()),
                    api_key=KEY,
                    worker=False,
                )
            )
            for _ in range(2)
        ]
        yield apis[0], apis[1]


def test_metrics_are_open_and_count_requests_runs_and_the_queue(
    two_apis: tuple[Service, Service],
) -> None:
    first, second = two_apis
    client = get_sync_client(url=first.url, api_key=KEY)
    gated = client.threads.create()
    client.runs.wait(gated["thread_id"], "interrupting", input={})  # here: waits at its gate
    thread = client.threads.create()
    client.runs.create(thread["thread_id"], "interrupting", input={})  # queued: no worker
    scraped = httpx.get(f"{first.url}/metrics")  # no key: a scraper holds none
    assert scraped.status_code == 200
    assert scraped.headers["content-type"].startswith("text/plain; version=")
    got = families(scraped.text)
    assert {
        name: got[name].type for name in REFERENCE_FAMILIES if name in got
    } == REFERENCE_FAMILIES
    requests = got["lg_api_http_requests"]
    assert value(requests, "_total", method="POST", path="/threads", status="200") == 2
    assert (
        value(
            requests, "_total", method="POST", path="/threads/{thread_id}/runs/wait", status="200"
        )
        == 1
    )
    assert (
        value(requests, "_total", method="POST", path="/threads/{thread_id}/runs", status="200")
        == 1
    )
    assert not [s for s in requests.samples if s.labels["path"] in ("/metrics", "/ok")]
    latency = got["lg_api_http_requests_latency"]
    waited = {"method": "POST", "path": "/threads/{thread_id}/runs/wait"}
    assert value(latency, "_count", **waited) == 1
    assert value(latency, "_bucket", le="+Inf", **waited) == 1
    assert value(got["lg_api_run_execution_latency"], "_count") == 1
    assert value(got["lg_api_workers_max"]) == 10
    assert value(got["lg_api_redis_pool_max"]) > 0
    for api in (first, second):  # cluster-wide: the other process sees the same queue
        seen = families(httpx.get(f"{api.url}/metrics").text)
        assert value(seen["lg_api_num_pending_runs"]) == 1
        assert value(seen["lg_api_pending_runs_wait_time_max"]) >= 0
        assert value(seen["graphwright_threads"], status="interrupted") == 1
        assert value(seen["graphwright_threads"], status="busy") == 0
    other = families(httpx.get(f"{second.url}/metrics").text)  # HTTP figures: per process
    assert other["lg_api_http_requests"].samples == []
    assert value(other["lg_api_run_execution_latency"], "_count") == 0


def test_metrics_json_is_the_reference_snapshot(two_apis: tuple[Service, Service]) -> None:
    first, _ = two_apis
    client = get_sync_client(url=first.url, api_key=KEY)
    thread = client.threads.create()
    client.runs.create(thread["thread_id"], "interrupting", input={})
    body = httpx.get(f"{first.url}/metrics", params={"format": "json"}).json()
    assert set(body) == {"redis", "queue", "api", "workers"}
    assert set(body["queue"]) == QUEUE_KEYS and body["queue"]["n_pending"] == 1
    assert body["queue"]["pending_runs_wait_time_max_secs"] >= 0
    assert body["api"]["http_requests_total"] == [
        {"method": "POST", "path": "/threads", "status": 200, "count": 1},
        {"method": "POST", "path": "/threads/{thread_id}/runs", "status": 200, "count": 1},
    ]
    assert body["workers"] == {"max": 10, "active": 0, "available": 10}
    assert set(body["redis"]) == {"idle_connections", "in_use_connections", "max_connections"}
    assert httpx.get(f"{first.url}/metrics", params={"format": "xml"}).text.startswith("# HELP")


DASHBOARD = ROOT / "docs" / "grafana" / "graphwright.json"


def test_the_example_dashboard_queries_only_families_metrics_has(
    two_apis: tuple[Service, Service],
) -> None:
    first, _ = two_apis
    client = get_sync_client(url=first.url, api_key=KEY)
    client.runs.wait(client.threads.create()["thread_id"], "interrupting", input={})
    shown = families(httpx.get(f"{first.url}/metrics").text)
    names = {sample.name for family in shown.values() for sample in family.samples} | set(shown)
    exprs = [t["expr"] for p in json.loads(DASHBOARD.read_text())["panels"] for t in p["targets"]]
    queried = {m for e in exprs for m in re.findall(r"\b(?:lg_api|graphwright)_\w+", e)}
    assert queried and queried <= names, queried - names
