"""HTTP runs on a 3-master Redis Cluster: the run transitions are one script on the thread's
slot; the queue, on another slot, is written as a second step."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langgraph_sdk import get_sync_client

from graphwright import Orchestrator
from graphwright.offline import OfflineChatModel
from graphwright.settings import Settings
from graphwright.testing.redis_servers import start_cluster
from graphwright.testing.service import Service, running


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    servers = start_cluster(tmp_path_factory.mktemp("cluster"))
    settings = Settings(_env_file=None, REDIS_URL=servers[0].url, GRAPHWRIGHT_REDIS_CLUSTER="true",  # type: ignore[call-arg]
                        GRAPHWRIGHT_KEY_PREFIX="clusterhttp")
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
    parts = list(sdk.runs.stream(tid, "agent", input={"goal": "订单 A1002 发货了吗？"}, stream_mode="updates"))
    assert parts[0].event == "metadata" and parts[-1].event == "updates"
    run = sdk.runs.create(tid, "agent", input={"goal": "订单 A1001 到哪了？"}, after_seconds=0.2)
    assert "派送中" in sdk.runs.join(tid, run["run_id"])["answer"]
    assert sdk.runs.get(tid, run["run_id"])["status"] == "success"
