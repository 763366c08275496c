"""The savers' one-buffer round trip (checkpoints.direct) answers as redis-py's Pipeline
would: same replies, error replies raised after every reply is read, the connection left
in step, a dropped connection replaced."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import redis
import redis.asyncio as aredis
from langgraph.checkpoint.conformance.test_utils import generate_checkpoint, generate_metadata

from graphwright.checkpoints import direct
from graphwright.checkpoints.redis import AsyncRedisSaver, RedisSaver
from graphwright.testing.redis_servers import Server

BATCH: list[tuple[Any, ...]] = [
    ("SET", "{d}:s", "v"),
    ("GET", "{d}:s"),
    ("HSET", "{d}:h", "f", "1", "g", "2"),
    ("HSETNX", "{d}:h", "f", "3"),
    ("HGETALL", "{d}:h"),
    ("SADD", "{d}:set", "a", "b"),
    ("SMEMBERS", "{d}:set"),
    ("ZADD", "{d}:z", 0, "m", 1, "n"),
    ("ZRANGE", "{d}:z", 0, -1, "WITHSCORES"),
    ("EXPIRE", "{d}:s", 100),
    ("EXISTS", "{d}:s", "{d}:nope"),
]


def _cfg(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}


def test_replies_are_those_of_a_pipeline(client: redis.Redis) -> None:
    client.delete("{d}:s", "{d}:h", "{d}:set", "{d}:z")
    got = direct.execute(client, BATCH)
    client.delete("{d}:s", "{d}:h", "{d}:set", "{d}:z")
    pipe = client.pipeline(transaction=False)
    for cmd in BATCH:
        pipe.execute_command(*cmd)
    assert got == pipe.execute()


def test_an_error_reply_is_raised_after_the_batch_and_loses_nothing(client: redis.Redis) -> None:
    client.delete("{d}:e")
    with pytest.raises(redis.ResponseError, match="not an integer"):
        direct.execute(client, [("SET", "{d}:e", "v"), ("INCR", "{d}:e"), ("SADD", "{d}:e2", "x")])
    # every command ran, and the pooled connection is still in step with its replies
    assert direct.execute(client, [("GET", "{d}:e"), ("SISMEMBER", "{d}:e2", "x")]) == [b"v", 1]


def test_a_killed_connection_is_replaced(redis_server: Server, prefix: str) -> None:
    client = redis.Redis(port=redis_server.port)
    saver = RedisSaver(client, prefix=prefix)
    stored = saver.put(_cfg("k"), generate_checkpoint(), generate_metadata(), {})
    admin = redis.Redis(port=redis_server.port)  # kills this client's one pooled connection
    assert admin.client_kill_filter(_id=client.client_id()) == 1
    saver.put_writes(stored, [("a", 1)], "task")
    latest = saver.get_tuple(_cfg("k"))
    assert latest is not None and latest.pending_writes == [("task", "a", 1)]
    admin.close()
    client.close()


def test_a_single_connection_client_is_safe_from_several_threads(
    redis_server: Server, prefix: str
) -> None:
    """LangGraph saves a task's writes on one thread while it saves the checkpoint on
    another: batches take pool connections, as a Pipeline does, not the client's one."""
    client = redis.Redis(port=redis_server.port, single_connection_client=True)
    saver = RedisSaver(client, prefix=prefix)

    def turn(n: int) -> int | None:
        thread = f"one-{n}"
        stored = saver.put(_cfg(thread), generate_checkpoint(), generate_metadata(step=n), {})
        saver.put_writes(stored, [("a", n)], "task")
        latest = saver.get_tuple(_cfg(thread))
        assert latest is not None and latest.pending_writes == [("task", "a", n)]
        return latest.metadata.get("step")

    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(turn, range(200))) == list(range(200))
    client.close()


def test_the_async_saver_answers_alike(redis_server: Server, prefix: str) -> None:
    async def main() -> None:
        client = aredis.Redis(port=redis_server.port)
        await client.delete("{d}:s", "{d}:h", "{d}:set", "{d}:z")
        got = await direct.aexecute(client, BATCH)
        sync = redis.Redis(port=redis_server.port)
        sync.delete("{d}:s", "{d}:h", "{d}:set", "{d}:z")
        assert got == direct.execute(sync, BATCH)
        sync.close()
        with pytest.raises(redis.ResponseError, match="not an integer"):
            await direct.aexecute(client, [("SET", "{d}:e", "v"), ("INCR", "{d}:e")])
        assert await direct.aexecute(client, [("GET", "{d}:e")]) == [b"v"]
        assert await direct.aexecute(client, []) == []  # reads nothing (a prune of no thread)
        saver = AsyncRedisSaver(client, prefix=prefix)
        stored = await saver.aput(_cfg("a"), generate_checkpoint(), generate_metadata(), {})
        admin = redis.Redis(port=redis_server.port)  # drops this client's pooled connection
        assert admin.client_kill_filter(_id=await client.client_id()) == 1
        admin.close()
        await saver.aput_writes(stored, [("a", 1)], "task")
        latest = await saver.aget_tuple(_cfg("a"))
        assert latest is not None and latest.pending_writes == [("task", "a", 1)]
        await client.aclose()

    asyncio.run(main())


def test_a_batch_is_packed_byte_for_byte_as_redis_py_packs_it(redis_server: Server) -> None:
    commands = [*BATCH, ("HSET", "{d}:ü", b"\x00\xff", "ünïcode", "n", 12345678901234)]
    for encoding in ("utf-8", "latin-1"):
        client = redis.Redis(port=redis_server.port, encoding=encoding)
        conn = client.connection_pool.get_connection()
        packed = b"".join(conn.pack_commands(commands))
        assert direct.pack(commands, conn.encoder.encoding) == packed
        client.connection_pool.release(conn)
        client.close()
