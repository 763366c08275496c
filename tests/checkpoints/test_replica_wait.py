"""GRAPHWRIGHT_WAIT_REPLICAS: checkpoints and idempotency records return only once a
replica holds them, and a write fewer replicas acknowledge is a warning naming it."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from redis.cluster import RedisCluster

from graphwright import Orchestrator
from graphwright.checkpoints.keys import Keys
from graphwright.checkpoints.replicas import ReplicaWait
from graphwright.locking import thread_lock
from graphwright.offline import OfflineChatModel
from graphwright.settings import Settings
from graphwright.testing.redis_servers import Server, start_cluster, start_server
from graphwright.testing.until import scaled
from graphwright.tools.policy import Policy
from graphwright.tools.records import Records
from graphwright_errors import ConfigurationError

# Slow: a cluster with replicas acknowledging every write
pytestmark = pytest.mark.slow

EMAIL = 'Email li@example.com with the subject "Weekly report" saying the report is ready.'


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Server]]:
    """A master and one replica that has synced with it."""
    root = tmp_path_factory.mktemp("pair")
    master = start_server(root / "master")
    replica = start_server(root / "replica", "--replicaof", "127.0.0.1", str(master.port))
    probe = redis.Redis(port=replica.port)
    deadline = time.monotonic() + scaled(20)
    while probe.info("replication")["master_link_status"] != "up":
        assert time.monotonic() < deadline, "the replica did not sync"
        time.sleep(0.05)
    probe.close()
    yield master, replica
    replica.stop()
    master.stop()


def waits(client: redis.Redis) -> int:
    stats: dict[str, dict[str, int]] = client.info("commandstats")  # type: ignore[assignment]
    return int(stats.get("cmdstat_wait", {}).get("calls", 0))


def test_a_run_waits_for_the_replica_on_every_checkpoint_and_record(
    pair: tuple[Server, Server],
    prefix: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    master, replica = pair
    monkeypatch.setenv("GRAPHWRIGHT_WAIT_REPLICAS", "1")
    settings = Settings(_env_file=None, REDIS_URL=master.url, GRAPHWRIGHT_KEY_PREFIX=prefix)  # type: ignore[call-arg]
    orch = Orchestrator(
        settings=settings, model=OfflineChatModel(), policy=Policy(per_tool={"send_email": "never"})
    )
    before = waits(orch.client)
    with caplog.at_level(logging.WARNING, logger="graphwright.checkpoints.replicas"):
        result = orch.invoke("agent", EMAIL, thread_id="acked")
    assert result.status == "completed", result
    assert waits(orch.client) - before >= 4  # each step's checkpoint, the email's claim and outcome
    assert not caplog.records, [r.getMessage() for r in caplog.records]
    assert (
        ReplicaWait(1, 1000).acknowledge(orch.client, orch.keys.replica_ack("acked"), "probe") >= 1
    )
    copy = redis.Redis(port=replica.port)
    assert copy.exists(orch.keys.checkpoints("acked")) == 1  # the replica holds the checkpoints
    copy.close()
    orch.client.close()


def test_an_idempotency_record_is_on_the_replica_when_claim_and_settle_return(
    pair: tuple[Server, Server],
    prefix: str,
) -> None:
    master, replica = pair
    client, copy = redis.Redis(port=master.port), redis.Redis(port=replica.port)
    records = Records(client, Keys(prefix=prefix), ttl_s=60, wait=ReplicaWait(1, 1000))
    before = waits(client)
    claim = records.claim("t", "call-1", tool="send_email", digest="d", key="t:call-1", fence=None)
    assert claim.outcome == "claimed"
    assert records.settle(
        "t", "call-1", attempt=claim.attempt, status="done", result="sent", fence=None
    )
    assert waits(client) - before == 2
    assert copy.hget(Keys(prefix=prefix).idempotency("t", "call-1"), "status") == b"done"
    client.close()
    copy.close()


def test_fewer_replicas_than_asked_is_a_warning_naming_the_write(
    pair: tuple[Server, Server],
    prefix: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    master, _ = pair
    monkeypatch.setenv("GRAPHWRIGHT_WAIT_REPLICAS", "2")
    monkeypatch.setenv("GRAPHWRIGHT_WAIT_TIMEOUT_MS", "50")
    settings = Settings(_env_file=None, REDIS_URL=master.url, GRAPHWRIGHT_KEY_PREFIX=prefix)  # type: ignore[call-arg]
    orch = Orchestrator(settings=settings, model=OfflineChatModel())
    with caplog.at_level(logging.WARNING, logger="graphwright.checkpoints.replicas"):
        assert orch.invoke("agent", "订单 A1001 到哪了？", thread_id="short").status == "completed"
    messages = [r.getMessage() for r in caplog.records]
    assert messages and all(
        "only 1 of 2 replica(s) acknowledged it within 50 ms" in m for m in messages
    )
    assert any(m.startswith("checkpoint of thread 'short'") for m in messages), messages
    orch.client.close()


def test_a_malformed_setting_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHWRIGHT_WAIT_REPLICAS", "one")
    with pytest.raises(
        ConfigurationError, match="GRAPHWRIGHT_WAIT_REPLICAS must be a whole number"
    ):
        ReplicaWait.from_env()
    monkeypatch.setenv("GRAPHWRIGHT_WAIT_REPLICAS", "0")
    assert ReplicaWait.from_env() is None


def test_on_a_cluster_the_wait_goes_to_the_node_of_the_thread(tmp_path: Path) -> None:
    servers = start_cluster(tmp_path / "cluster", masters=3, replicas=1)
    try:
        client = RedisCluster(host="127.0.0.1", port=servers[0].port)
        for thread in ("a", "b", "c", "d"):
            assert ReplicaWait(1, 1000).acknowledge(client, f"x:{{{thread}}}:ack", "probe") == 1
        client.close()
    finally:
        for s in servers:
            s.stop()


def test_taking_the_run_lock_waits_for_the_replica_to_hold_the_fence(
    pair: tuple[Server, Server],
    prefix: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    master, replica = pair
    monkeypatch.setenv("GRAPHWRIGHT_WAIT_REPLICAS", "1")
    client, copy = redis.Redis(port=master.port), redis.Redis(port=replica.port)
    keys = Keys(prefix=prefix)
    before = waits(client)
    with thread_lock(client, keys, "fenced") as lock:
        assert waits(client) - before == 1
        # When the lock is ours the replica holds its token: a promoted replica goes on from it.
        assert int(copy.get(keys.fence("fenced")) or 0) == lock.fence
    client.close()
    copy.close()
