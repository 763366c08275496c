"""A `runs.join` waiting while Redis is away for a few seconds (a restart, a cluster
failover) answers the run's result once it ends, not 503: its reads ride the Redis retry
budget, and the worker that then runs it rides the failover too."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from langgraph_sdk import get_sync_client

from graphwright import Orchestrator, Settings
from graphwright.offline import OfflineChatModel
from graphwright.server.background.worker import Worker
from graphwright.testing.redis_servers import start_cluster
from graphwright.testing.service import running
from graphwright.testing.until import scaled, until
from tests.support.redis_faults import Restartable, owner_of

# Slow: Redis stopped, or a cluster master killed, under a waiting join
pytestmark = pytest.mark.slow

# Longer than the API's asyncio client rides out on its own (eight retries, backoff capped at
# 1 s), shorter than the retry budget: the join must wait it out.
OUTAGE_S = 6.0


@pytest.fixture
def restartable(tmp_path: Path) -> Iterator[Restartable]:
    r = Restartable(tmp_path / "redis")
    yield r
    r.server.stop()


def joining(client: redis.Redis) -> bool:
    """Whether a client of the server waits in a blocking XREAD (the join's wait)."""
    listing: Any = client.client_list()
    return any(c.get("cmd") == "xread" for c in listing)


def test_a_join_waits_through_a_redis_outage_and_answers_the_run(restartable: Restartable) -> None:
    settings = Settings(
        _env_file=None,
        REDIS_URL=restartable.url,  # type: ignore[call-arg]
        GRAPHWRIGHT_KEY_PREFIX="j",
        GRAPHWRIGHT_REDIS_RETRY_S="20",
    )
    orch = Orchestrator(settings=settings, model=OfflineChatModel())
    answers: list[Any] = []
    with running(orch, worker=False) as svc:
        sdk = get_sync_client(url=svc.url, api_key=None)
        tid = sdk.threads.create()["thread_id"]
        run = sdk.runs.create(tid, "agent", input={"goal": "What is 2 + 3?"})  # no worker yet

        def join() -> None:
            try:
                answers.append(sdk.runs.join(tid, run["run_id"]))
            except Exception as exc:  # the test reads it
                answers.append(exc)

        joiner = threading.Thread(target=join)
        joiner.start()
        probe = redis.Redis(port=restartable.port)
        until(lambda: joining(probe), "the join to wait on the run's end", 10)
        probe.close()
        restartable.outage(OUTAGE_S)
        worker = Worker(orch, name="after-outage", block_ms=100, grace_s=2)
        working = threading.Thread(target=worker.run_forever, daemon=True)
        working.start()
        try:
            joiner.join(timeout=scaled(60))
            assert not joiner.is_alive() and answers
            assert not isinstance(answers[0], Exception), answers[0]  # not 503
            assert "__error__" not in answers[0] and answers[0].get("messages")
            assert sdk.runs.get(tid, run["run_id"])["status"] == "success"
        finally:
            worker.stop.set()
            working.join(timeout=scaled(10))
    orch.close()


def test_a_join_waits_through_a_cluster_failover_and_answers_the_run(tmp_path: Path) -> None:
    servers = start_cluster(tmp_path / "cluster", masters=3, replicas=1)
    try:
        settings = Settings(
            _env_file=None,
            REDIS_URL=servers[1].url,  # type: ignore[call-arg]
            GRAPHWRIGHT_KEY_PREFIX="jc",
            GRAPHWRIGHT_REDIS_CLUSTER=True,
        )
        orch = Orchestrator(settings=settings, model=OfflineChatModel())
        doomed = servers[0]  # its replica (servers[3]) takes its slots over
        tid = next(
            t
            for t in (f"join-failover-{i}" for i in range(200))
            if owner_of(servers, orch.keys.run_end(t, "x")) is doomed
        )
        answers: list[Any] = []
        with running(orch, worker=False) as svc:
            sdk = get_sync_client(url=svc.url, api_key=None)
            sdk.threads.create(thread_id=tid)
            run = sdk.runs.create(tid, "agent", input={"goal": "What is 2 + 3?"})

            def join() -> None:
                try:
                    answers.append(sdk.runs.join(tid, run["run_id"]))
                except Exception as exc:  # the test reads it
                    answers.append(exc)

            joiner = threading.Thread(target=join)
            joiner.start()
            probe = redis.Redis(port=doomed.port)
            until(lambda: joining(probe), "the join to wait on the run's end", 10)
            probe.close()
            doomed.process.kill()
            promoted = redis.Redis(port=servers[3].port)
            until(lambda: promoted.info("replication")["role"] == "master", "the failover", 30)
            promoted.close()
            worker = Worker(orch, name="after-failover", block_ms=100, grace_s=2)
            working = threading.Thread(target=worker.run_forever, daemon=True)
            working.start()
            try:
                joiner.join(timeout=scaled(60))
                assert not joiner.is_alive() and answers
                assert not isinstance(answers[0], Exception), answers[0]  # not 503
                assert sdk.runs.get(tid, run["run_id"])["status"] == "success"
            finally:
                worker.stop.set()
                working.join(timeout=scaled(10))
    finally:
        for server in servers:
            if server.process.poll() is None:
                server.stop()
