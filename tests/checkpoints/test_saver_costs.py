"""The saver's costs, counted (not timed): round trips per call and commands the server
runs per `put`, with and without a TTL, early and late in a thread."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from langgraph.checkpoint.conformance.test_utils import generate_checkpoint, generate_metadata

from graphwright.checkpoints.redis import RedisSaver
from graphwright.testing.redis_servers import Server
from graphwright.testing.redis_servers import redis_server as private_server


class CountingConnection(redis.Connection):
    """A real connection that counts the times it sends to the server (round trips)."""

    sends = 0

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        CountingConnection.sends += 1
        super().send_packed_command(command, check_health)


@pytest.fixture
def counting_client(redis_server: Server) -> Iterator[redis.Redis]:
    pool = redis.ConnectionPool(
        host="127.0.0.1", port=redis_server.port, connection_class=CountingConnection
    )
    client = redis.Redis(connection_pool=pool)
    client.ping()
    yield client
    client.close()


def _cfg(thread: str, cid: str | None = None, ns: str = "") -> dict[str, Any]:
    conf: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ns}
    if cid:
        conf["checkpoint_id"] = cid
    return {"configurable": conf}


def _step(saver: RedisSaver, thread: str, parent: dict[str, Any] | None, step: int) -> Any:
    cp = generate_checkpoint(channel_values={"a": step, "b": "same"})
    cp["channel_versions"] = {"a": step + 1, "b": 1}
    new = {"a": step + 1} if step else {"a": 1, "b": 1}
    config = parent or _cfg(thread)
    return saver.put(config, cp, generate_metadata(step=step, run_id="run-1"), new)


class Sends:
    def __init__(self) -> None:
        self.start = CountingConnection.sends

    @property
    def count(self) -> int:
        return CountingConnection.sends - self.start


def test_round_trips_per_put_put_writes_and_latest_get_tuple(
    counting_client: redis.Redis, prefix: str
) -> None:
    saver = RedisSaver(counting_client, prefix=prefix)
    _step(saver, "warm", None, 0)
    saver.get_tuple(
        _cfg("warm")
    )  # a read loads the scripts: the server has them, as in a running worker
    parent = None
    for step in range(4):
        sends = Sends()
        parent = _step(saver, "rt", parent, step)
        assert sends.count == (2 if step == 0 else 1)  # a new thread: + its index entries
        sends = Sends()
        saver.put_writes(parent, [("a", step), ("b", "x")], f"task-{step}")
        assert sends.count == 1
    sends = Sends()
    latest = saver.get_tuple(_cfg("rt"))
    assert sends.count == 2
    assert latest is not None
    assert latest.checkpoint["channel_values"] == {"a": 3, "b": "same"}
    assert len(latest.pending_writes or []) == 2
    sends = Sends()
    saver.delete_thread("rt")
    assert sends.count == 1
    assert saver.get_tuple(_cfg("rt")) is None


def _commands(client: redis.Redis) -> int:
    """Commands the server ran since the last CONFIG RESETSTAT, calls in scripts included."""
    stats = client.info("commandstats")
    return sum(v["calls"] for k, v in stats.items() if not k.startswith("cmdstat_config"))


def _put_commands(client: redis.Redis, saver: RedisSaver, thread: str, steps: int) -> list[int]:
    """Commands the server ran per put."""
    parent = None
    counts = []
    for step in range(steps):
        client.config_resetstat()
        parent = _step(saver, thread, parent, step)
        counts.append(_commands(client))
    return counts


@pytest.fixture
def own_client() -> Iterator[redis.Redis]:
    """A client of a server of this test's own: `INFO commandstats` counts every client's
    commands, and a background thread of an earlier test on the shared server adds some."""
    with private_server() as server:
        own = redis.Redis.from_url(server.url)
        yield own
        own.close()


@pytest.mark.parametrize("ttl_s", [None, 3600])
def test_server_commands_per_put_are_fixed_with_and_without_ttl(
    own_client: redis.Redis, prefix: str, ttl_s: int | None
) -> None:
    client = own_client
    saver = RedisSaver(client, prefix=prefix, ttl_s=ttl_s)
    _step(saver, "warm", None, 0)  # the server has the scripts, as in a running worker
    counts = _put_commands(client, saver, "cmds", 40)
    ttl = len(saver.keys.ttl_keys("cmds")) if ttl_s else 0
    # HMGET (what is indexed), ZREMRANGEBYLEX, HSET (blobs), ZADD (checkpoint), SADD (run
    # ids), an EXPIRE per TTL key; on a new thread, then, its entries in three global indexes
    # and the marker that they are written (with its EXPIRE)
    assert counts[0] == 5 + ttl + 3 + 1 + (1 if ttl_s else 0)
    assert counts[1:] == [5 + ttl] * 39
    writes: list[int] = []
    parent = saver.get_tuple(_cfg("cmds"))
    assert parent is not None
    for i in range(3):
        client.config_resetstat()
        saver.put_writes(parent.config, [("a", i), ("b", i)], f"t{i}")
        writes.append(_commands(client))
    # HSETNX per write, ZADD of their index entries (+ EXPIRE of the two writes keys)
    assert writes == [3 + (2 if ttl_s else 0)] * 3


def test_alist_streams_a_page_at_a_time(counting_client: redis.Redis, prefix: str) -> None:
    saver = RedisSaver(counting_client, prefix=prefix)
    parent = None
    for step in range(150):
        parent = _step(saver, "long", parent, step)

    async def first() -> Any:
        sends = Sends()
        items = saver.alist(_cfg("long"))
        got = await items.__anext__()
        await items.aclose()
        return got, sends.count

    got, sends = asyncio.run(first())
    assert got.metadata["step"] == 149
    assert sends == 3  # a page of checkpoints, its writes' index (no writes), its blobs
