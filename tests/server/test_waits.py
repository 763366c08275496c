"""Waiting without a thread: open `join_stream` clients wait on blocking reads in async
code, so the synchronous routes (`/threads/search`) still answer with 100 of them open."""

from __future__ import annotations

import asyncio
import time

import httpx
import redis
from langgraph_sdk import get_sync_client

from graphwright.testing.kit import until
from graphwright.testing.service import service_for

PLUGIN = "tests.support.slow_graphs:register_all"
GOAL = 'Schedule "Design review" on 2026-12-01 from 10:00 to 11:00.'
STREAMS = 100


async def hold_streams(url: str, path: str, opened: asyncio.Event, done: asyncio.Event) -> None:
    limits = httpx.Limits(max_connections=STREAMS + 10)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as http:

        async def one() -> None:
            async with http.stream("GET", path) as response:
                async for _ in response.aiter_lines():
                    if done.is_set():
                        return

        tasks = [asyncio.create_task(one()) for _ in range(STREAMS)]
        await asyncio.sleep(0)
        opened.set()
        await done.wait()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def blocked(client: redis.Redis) -> int:
    """Connections waiting in a blocking stream read now."""
    return sum(1 for c in client.client_list() if c.get("cmd") == "xread")


def test_a_hundred_open_join_streams_leave_threads_search_answering(
    redis_url: str, prefix: str, client: redis.Redis
) -> None:
    client.set(f"{prefix}:slow:hold_answer", 1)  # the run stays under way while the key exists
    with service_for(redis_url, prefix, PLUGIN, worker=True) as svc:
        sdk = get_sync_client(url=svc.url, api_key=None)
        tid = sdk.threads.create()["thread_id"]
        run = sdk.runs.create(tid, "held_answer", input={"goal": GOAL})
        until(lambda: client.get(f"{prefix}:slow:answering") == b"1", "the run to be under way")
        path = f"/threads/{tid}/runs/{run['run_id']}/stream"

        async def scenario() -> list[float]:
            opened, done = asyncio.Event(), asyncio.Event()
            holder = asyncio.create_task(hold_streams(svc.url, path, opened, done))
            await opened.wait()
            deadline = time.monotonic() + 10
            # The condition is in Redis (its CLIENT LIST): no Event can signal it.
            while blocked(client) < STREAMS and time.monotonic() < deadline:  # noqa: ASYNC110
                await asyncio.sleep(0.05)  # every stream at its blocking read (or the limit)
            took = []
            async with httpx.AsyncClient(base_url=svc.url, timeout=10) as http:
                for _ in range(5):
                    began = time.monotonic()
                    answer = await http.post("/threads/search", json={"limit": 10})
                    took.append(time.monotonic() - began)
                    assert answer.status_code == 200
            done.set()
            await holder
            return took

        took = asyncio.run(scenario())
        client.delete(f"{prefix}:slow:hold_answer")
        sdk.runs.join(tid, run["run_id"])
        assert sorted(took)[2] < 1.0, took  # a starved pool would time out (10 s) instead
