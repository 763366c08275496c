"""Open `join_stream` clients against the rest of the API.

`/threads/search` p50 with none open, then with `--streams` (500) clients joined to a run that is
under way, in one run on one service. The target: within 1.2x of the idle figure.

    python -m bench.streams [--streams 500] [--queries 100] [--threads 1000]

Starts its own redis-server and serves in this process, with no worker: the joined run
stays pending, so every stream waits on its blocking read for the whole measurement.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Callable

import httpx
from langgraph_sdk import get_sync_client

from graphwright.testing.kit import bound_orchestrator, settings_for, until
from graphwright.testing.redis_servers import redis_server
from graphwright.testing.service import running


async def search_p50(url: str, queries: int) -> float:
    took = []
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        for i in range(queries):
            began = time.perf_counter()
            answer = await http.post("/threads/search", json={"limit": 10, "offset": i % 50})
            took.append(time.perf_counter() - began)
            answer.raise_for_status()
    return statistics.median(took) * 1000


async def with_streams(
    url: str, path: str, streams: int, queries: int, blocked: Callable[[], int]
) -> float:
    limits = httpx.Limits(max_connections=streams + 10)
    async with httpx.AsyncClient(base_url=url, timeout=None, limits=limits) as http:

        async def one() -> None:
            async with http.stream("GET", path) as response:
                async for _ in response.aiter_lines():
                    pass

        tasks = [asyncio.create_task(one()) for _ in range(streams)]
        deadline = time.monotonic() + 60
        # The condition is in Redis (its CLIENT LIST): no Event can signal it.
        while blocked() < streams and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.1)
        p50 = await search_p50(url, queries)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return p50


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=500)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--threads", type=int, default=1000, help="threads the search looks at")
    args = parser.parse_args()
    with (
        redis_server() as server,
        bound_orchestrator(
            server.url, settings=settings_for(server.url, GRAPHWRIGHT_RUN_RATE=0)
        ) as orch,
        running(orch, worker=False) as svc,
    ):
        for i in range(args.threads):
            orch.create_thread(f"bench-{i:05d}", {"user": f"u{i % 100}"})
        sdk = get_sync_client(url=svc.url, api_key=None)
        tid = sdk.threads.create()["thread_id"]
        run = sdk.runs.create(tid, "agent", input={"goal": "hello"})  # no worker: stays pending
        path = f"/threads/{tid}/runs/{run['run_id']}/stream"

        def blocked() -> int:
            return sum(1 for c in orch.client.client_list() if c.get("cmd") == "xread")

        idle = asyncio.run(search_p50(svc.url, args.queries))
        busy = asyncio.run(with_streams(svc.url, path, args.streams, args.queries, blocked))
        idle_after = asyncio.run(search_p50(svc.url, args.queries))
        until(lambda: blocked() == 0, "the streams to close", 30)
        print(
            f"/threads/search p50: idle {idle:.2f} ms, with {args.streams} open join_streams "
            f"{busy:.2f} ms, idle again {idle_after:.2f} ms; ratio {busy / idle:.2f}x "
            f"({busy / ((idle + idle_after) / 2):.2f}x the mean idle)"
        )


if __name__ == "__main__":
    main()
