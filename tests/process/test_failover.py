"""A run in flight while Redis fails over: the Sentinel-watched master dies and Sentinel
promotes its replica, or a cluster master dies and its replica takes its slots over; either
way the run carries on and books its event once."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
import redis

from graphwright import Orchestrator
from graphwright.results import RunResult
from graphwright.settings import Settings
from graphwright.testing.redis_servers import Server, start_cluster, start_sentinel, start_server
from graphwright.testing.until import scaled
from tests.support.redis_faults import owner_of

# Slow: Redis Cluster and Sentinel failing over under a run
pytestmark = pytest.mark.slow

GOAL = 'Schedule "Design review" on 2026-12-01 from 10:00 to 11:00.'
PLUGIN = "tests.support.slow_graphs:register"


def settings_for(url: str, prefix: str, *, cluster: bool) -> Settings:
    return Settings(
        _env_file=None,
        REDIS_URL=url,
        GRAPHWRIGHT_KEY_PREFIX=prefix,  # type: ignore[call-arg]
        GRAPHWRIGHT_REDIS_CLUSTER=cluster,
        GRAPHWRIGHT_GRAPHS=PLUGIN,
        # A failover on a loaded machine can outlast a renewal's retries (the lock is then
        # given up, rightly); these tests are about riding through it, not about the lock.
        GRAPHWRIGHT_LOCK_TTL_S=scaled(120),
    )


def run_in_background(
    orch: Orchestrator, thread_id: str
) -> tuple[threading.Thread, list[RunResult | BaseException]]:
    """The run in a thread; its result, or what it raised, lands in the list."""
    results: list[RunResult | BaseException] = []

    def run() -> None:
        try:
            results.append(orch.invoke("slow_agent", GOAL, thread_id=thread_id))
        except BaseException as exc:  # shown by the test's assertion, not lost in a thread
            results.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    return worker, results


def completed(results: list[RunResult | BaseException]) -> bool:
    return bool(results) and isinstance(results[0], RunResult) and results[0].status == "completed"


def wait_for(condition: object, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + scaled(timeout_s)
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.05)


def events(client: redis.Redis, key: str) -> list[dict[str, object]]:
    return [json.loads(v) for v in client.hvals(key)]  # type: ignore[union-attr]


def test_a_run_rides_through_a_sentinel_promoting_a_replica(tmp_path: Path) -> None:
    master = start_server(tmp_path / "master", "--appendonly", "yes")
    replica = start_server(
        tmp_path / "replica", "--appendonly", "yes", "--replicaof", "127.0.0.1", str(master.port)
    )
    port, sentinel = start_sentinel(tmp_path / "sentinel", master.port)
    try:
        wait_for(
            lambda: redis.Redis(port=replica.port).info("replication")["master_link_status"] == "up"
        )
        orch = Orchestrator(
            settings=settings_for(
                f"redis+sentinel://127.0.0.1:{port}/gwmaster", "so", cluster=False
            )
        )
        worker, results = run_in_background(orch, "sentinel-failover")
        direct = redis.Redis(port=master.port)
        wait_for(lambda: direct.get("so:slow:started") == b"1")
        direct.close()
        master.process.kill()  # the sentinel promotes the replica
        worker.join(timeout=scaled(60))
        assert completed(results), results
        promoted = redis.Redis(port=replica.port)
        assert promoted.info("replication")["role"] == "master"
        booked = [
            e for e in events(promoted, orch.keys.calendar()) if e["title"] == "Design review"
        ]
        assert len(booked) == 1
        promoted.close()
    finally:
        sentinel.terminate()
        sentinel.wait(timeout=scaled(10))
        for server in (master, replica):
            if server.process.poll() is None:
                server.stop()


def fail_over(servers: list[Server], how: str) -> None:
    """Take servers[0]'s slots away: kill it, or have its replica (servers[3]) take over."""
    if how == "kill":
        servers[0].process.kill()
        return
    replica = redis.Redis(port=servers[3].port)
    replica.execute_command("CLUSTER", "FAILOVER")
    replica.close()


@pytest.mark.parametrize("how", ["kill", "cluster-failover"])
def test_a_run_rides_through_a_cluster_master_failing_over(tmp_path: Path, how: str) -> None:
    servers = start_cluster(tmp_path / "cluster", masters=3, replicas=1)
    try:
        orch = Orchestrator(settings=settings_for(servers[0].url, "cf", cluster=True))
        # The hardest case: the master that dies is also the node REDIS_URL names.
        doomed = servers[0]
        thread_id = next(
            t
            for t in (f"cluster-failover-{i}" for i in range(100))
            if owner_of(servers, orch.keys.meta(t)) is doomed
        )
        worker, results = run_in_background(orch, thread_id)
        wait_for(lambda: orch.client.get("cf:slow:started") == b"1")
        fail_over(servers, how)  # mid-tool: the run's next checkpoint goes to this slot
        worker.join(timeout=scaled(60))
        assert completed(results), results
        promoted = owner_of(servers[1:], orch.keys.meta(thread_id))
        assert promoted is servers[3]  # start_cluster's replica of servers[0] took its slots over
        booked = [
            e for e in events(orch.client, orch.keys.calendar()) if e["title"] == "Design review"
        ]
        assert len(booked) == 1
        orch.client.close()
    finally:
        for server in servers:
            if server.process.poll() is None:
                server.stop()
