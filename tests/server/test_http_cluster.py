"""HTTP runs on a 3-master Redis Cluster: the run transitions are one script on the thread's
slot; the queue, on another slot, is written as a second step."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from langgraph_sdk import get_sync_client
from prometheus_client.parser import text_string_to_metric_families

from graphwright import Orchestrator
from graphwright.offline import OfflineChatModel
from graphwright.settings import Settings
from graphwright.testing.redis_servers import start_cluster
from graphwright.testing.service import Service, running


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    servers = start_cluster(tmp_path_factory.mktemp("cluster"))
    settings = Settings(
        _env_file=None,
        REDIS_URL=servers[0].url,
        GRAPHWRIGHT_REDIS_CLUSTER="true",  # type: ignore[call-arg]
        GRAPHWRIGHT_KEY_PREFIX="clusterhttp",
    )
    try:
        with running(Orchestrator(settings=settings, model=OfflineChatModel())) as svc:
            yield svc
    finally:
        for s in servers:
            s.stop()


def test_runs_wait_stream_and_queue_on_a_cluster(service: Service) -> None:
    sdk = get_sync_client(url=service.url, api_key=None)
    tid = sdk.threads.create()["thread_id"]
    assert "派送中" in sdk.runs.wait(tid, "agent", input={"goal": "订单 A1001 到哪了？"})["answer"]
    parts = list(
        sdk.runs.stream(
            tid, "agent", input={"goal": "订单 A1002 发货了吗？"}, stream_mode="updates"
        )
    )
    assert parts[0].event == "metadata" and parts[-1].event == "updates"
    run = sdk.runs.create(tid, "agent", input={"goal": "订单 A1001 到哪了？"}, after_seconds=0.2)
    assert "派送中" in sdk.runs.join(tid, run["run_id"])["answer"]
    assert sdk.runs.get(tid, run["run_id"])["status"] == "success"


def test_metrics_read_the_queue_and_threads_from_the_cluster(service: Service) -> None:
    sdk = get_sync_client(url=service.url, api_key=None)
    tid = sdk.threads.create()["thread_id"]
    sdk.runs.wait(tid, "agent", input={"goal": "订单 A1001 到哪了？"})
    body = httpx.get(f"{service.url}/metrics", params={"format": "json"}).json()
    assert "redis" not in body  # a cluster client's connections are spread over many pools
    assert body["queue"]["n_pending"] == 0 and body["queue"]["n_running"] == 0
    text = httpx.get(f"{service.url}/metrics").text
    threads = {
        s.labels["status"]: s.value
        for f in text_string_to_metric_families(text)
        if f.name == "graphwright_threads"
        for s in f.samples
    }
    assert threads["idle"] >= 1 and threads["busy"] == 0
