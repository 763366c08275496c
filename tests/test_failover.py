"""A run in flight while Redis fails over: the Sentinel-watched master dies, Sentinel promotes
its replica, and the run carries on with its effect once."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import redis

from graphwright import Orchestrator
from graphwright.results import RunResult
from graphwright.settings import Settings
from graphwright.testing.redis_servers import start_sentinel, start_server

GOAL = 'Schedule "Design review" on 2026-12-01 from 10:00 to 11:00.'
PLUGIN = "tests.slow_graphs:register"


def settings_for(url: str, prefix: str, *, cluster: bool) -> Settings:
    return Settings(_env_file=None, REDIS_URL=url, GRAPHWRIGHT_KEY_PREFIX=prefix,  # type: ignore[call-arg]
                    GRAPHWRIGHT_REDIS_CLUSTER=cluster, GRAPHWRIGHT_GRAPHS=PLUGIN)


def run_in_background(orch: Orchestrator, thread_id: str) -> tuple[threading.Thread, list[RunResult]]:
    results: list[RunResult] = []
    worker = threading.Thread(target=lambda: results.append(orch.invoke("slow_agent", GOAL, thread_id=thread_id)))
    worker.start()
    return worker, results


def wait_for(condition: object, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.05)


def events(client: redis.Redis, key: str) -> list[dict[str, object]]:
    return [json.loads(v) for v in client.hvals(key)]  # type: ignore[union-attr]


def test_a_run_rides_through_a_sentinel_promoting_a_replica(tmp_path: Path) -> None:
    master = start_server(tmp_path / "master", "--appendonly", "yes")
    replica = start_server(tmp_path / "replica", "--appendonly", "yes",
                           "--replicaof", "127.0.0.1", str(master.port))
    port, sentinel = start_sentinel(tmp_path / "sentinel", master.port)
    try:
        wait_for(lambda: redis.Redis(port=replica.port).info("replication")["master_link_status"] == "up")
        orch = Orchestrator(settings=settings_for(f"redis+sentinel://127.0.0.1:{port}/gwmaster", "so",
                                                  cluster=False))
        worker, results = run_in_background(orch, "sentinel-failover")
        direct = redis.Redis(port=master.port)
        wait_for(lambda: direct.get("so:slow:started") == b"1")
        direct.close()
        master.process.kill()  # the sentinel promotes the replica
        worker.join(timeout=60)
        assert results and results[0].status == "completed", results
        promoted = redis.Redis(port=replica.port)
        assert promoted.info("replication")["role"] == "master"
        booked = [e for e in events(promoted, orch.keys.calendar()) if e["title"] == "Design review"]
        assert len(booked) == 1
        promoted.close()
    finally:
        sentinel.terminate()
        sentinel.wait(timeout=10)
        for server in (master, replica):
            if server.process.poll() is None:
                server.stop()
