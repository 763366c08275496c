"""`AsyncRedisSaver` waits for replicas like `RedisSaver`: every run checkpoints
through it now, on one server and on a cluster (where the wait goes to the thread's node)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
import redis
from langgraph.checkpoint.base import empty_checkpoint
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster

from graphwright.checkpoints.redis_async import AsyncRedisSaver
from graphwright.checkpoints.replicas import ReplicaWait
from graphwright.testing.redis_servers import start_cluster


def waits(port: int) -> int:
    client = redis.Redis(port=port)
    stats: dict[str, dict[str, int]] = client.info("commandstats")  # type: ignore[assignment]
    client.close()
    return int(stats.get("cmdstat_wait", {}).get("calls", 0))


def test_on_a_cluster_each_put_waits_on_the_node_of_its_thread(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    servers = start_cluster(tmp_path / "cluster", masters=3, replicas=1)
    try:
        before = sum(waits(s.port) for s in servers)

        async def puts() -> None:
            client = AsyncRedisCluster(host="127.0.0.1", port=servers[0].port)
            saver = AsyncRedisSaver(client, prefix="acked", wait=ReplicaWait(1, 2000))
            for thread in ("a", "b", "c", "d"):
                config = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
                await saver.aput(config, empty_checkpoint(), {"step": 0}, {})  # type: ignore[arg-type]
            await client.aclose()

        with caplog.at_level(logging.WARNING):
            asyncio.run(puts())
        assert sum(waits(s.port) for s in servers) - before == 4  # one WAIT per put
        assert not [r.getMessage() for r in caplog.records if "replica" in r.getMessage()]
    finally:
        for s in servers:
            s.stop()
