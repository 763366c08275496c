"""The HTTP API against the Python API: 100 concurrent waits, then token streams.

100 concurrent `runs.wait` through one API process and two workers, against the same runs through
the Python API directly, measured in one run; then token streams: time to first token and events per
second of one stream, through the API (run on a worker, relayed from its Redis stream) against
LangGraph's `stream` in this process.

    python -m bench.http [--runs 100] [--streams 30]
    python -m bench.http --search 10000   (thread search: the Redis index against the old scan)

(A module, not a script: a script named http.py would shadow the standard library's http.)

Starts its own redis-server, `graphwright serve --queue` and two `graphwright worker`
processes on free ports, all on the offline model, and the fixed streaming chat model of
the tests (20 chunks per reply). Prints p50 and p99 latency and runs per second for both
paths, time to first token and events per second, and their ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from typing import Any

import httpx
from langgraph_sdk import get_client, get_sync_client

from bench import thread_search
from graphwright import Orchestrator, Settings
from graphwright.offline import OfflineChatModel
from graphwright.testing.fixed_openai import CHUNKS, serving
from graphwright.testing.redis_servers import start_server

GOAL = "订单 A1001 到哪了？"
HI = {"messages": [{"role": "user", "content": "hi"}]}
PLUGIN = "tests.support.protocol_graphs:register"  # loaded by name in the served processes
CHAT_URL_ENV = "PROTOCOL_CHAT_URL"  # where those graphs find their chat model
ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def through_http(url: str, n: int) -> tuple[list[float], float]:
    client = get_client(url=url, api_key=None)
    threads = [(await client.threads.create())["thread_id"] for _ in range(n)]

    async def one(tid: str) -> float:
        started = time.perf_counter()
        values = await client.runs.wait(tid, "agent", input={"goal": GOAL})
        if "派送中" not in values.get("answer", ""):
            raise RuntimeError(f"run on {tid} did not complete: {values}")
        return time.perf_counter() - started

    started = time.perf_counter()
    latencies = await asyncio.gather(*(one(t) for t in threads))
    return list(latencies), time.perf_counter() - started


async def through_python(orch: Orchestrator, n: int) -> tuple[list[float], float]:
    async def one(i: int) -> float:
        started = time.perf_counter()
        result = await orch.ainvoke("agent", GOAL, thread_id=f"direct-{i}")
        if result.status != "completed":
            raise RuntimeError(f"direct run {i} ended {result.status}")
        return time.perf_counter() - started

    started = time.perf_counter()
    latencies = await asyncio.gather(*(one(i) for i in range(n)))
    return list(latencies), time.perf_counter() - started


def stream_http(url: str, n: int) -> tuple[list[float], list[float]]:
    """Per stream: seconds to the first token, and events per second from first to last."""
    client = get_sync_client(url=url, api_key=None)
    firsts, rates = [], []
    for _ in range(n):
        tid = client.threads.create()["thread_id"]
        started, stamps = time.perf_counter(), []
        for part in client.runs.stream(tid, "chat", input=HI, stream_mode="messages-tuple"):
            if part.event == "messages":
                stamps.append(time.perf_counter())
        firsts.append(stamps[0] - started)
        rates.append((len(stamps) - 1) / (stamps[-1] - stamps[0]))
    return firsts, rates


def stream_direct(orch: Orchestrator, n: int) -> tuple[list[float], list[float]]:
    graph = orch.compiled("chat")
    firsts, rates = [], []
    for i in range(n):
        config: Any = {"configurable": {"thread_id": f"direct-stream-{i}"}}
        started, stamps = time.perf_counter(), []
        for _chunk in graph.stream(HI, config, stream_mode="messages"):
            stamps.append(time.perf_counter())
        firsts.append(stamps[0] - started)
        rates.append((len(stamps) - 1) / (stamps[-1] - stamps[0]))
    return firsts, rates


def report_streams(
    http: tuple[list[float], list[float]], direct: tuple[list[float], list[float]]
) -> None:
    print(f"\n{len(http[0])} token streams of {CHUNKS} chunks each (messages-tuple), one at a time")
    print(f"{'path':<28}{'TTFT p50 ms':>14}{'events/s p50':>14}")
    for name, (firsts, rates) in {
        "HTTP (worker, relayed)": http,
        "Python (graph.stream)": direct,
    }.items():
        print(
            f"{name:<28}{statistics.median(firsts) * 1000:>14.1f}{statistics.median(rates):>14.0f}"
        )
    print(
        "HTTP / direct: time to first token"
        f" {statistics.median(http[0]) / statistics.median(direct[0]):.2f}x,"
        f" events per second {statistics.median(http[1]) / statistics.median(direct[1]):.2f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--search", type=int, default=0, help="threads for the search benchmark")
    parser.add_argument("--streams", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, serving() as chat_url:
        server = start_server(Path(tmp))
        os.environ[CHAT_URL_ENV] = chat_url
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
        env.update(
            REDIS_URL=server.url,
            GRAPHWRIGHT_KEY_PREFIX="benchhttp",
            GRAPHWRIGHT_GRAPHS=PLUGIN,
            PYTHONPATH=str(ROOT),
        )
        port = free_port()
        cli = [sys.executable, "-m", "graphwright"]
        procs = [subprocess.Popen([*cli, "serve", "--queue", "--port", str(port)], env=env)]
        procs += [
            subprocess.Popen(
                [*cli, "worker", "--name", f"w{i}"], env=env, stdout=subprocess.DEVNULL
            )
            for i in range(2)
        ]
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 180
            while True:
                try:
                    if httpx.get(f"{url}/ok").status_code == 200:
                        break
                except httpx.TransportError:
                    pass  # not listening yet
                if time.monotonic() > deadline:
                    raise RuntimeError("the API did not start")
                time.sleep(0.1)
            if args.search:
                settings = Settings(
                    _env_file=None,
                    REDIS_URL=server.url,  # type: ignore[call-arg]
                    GRAPHWRIGHT_KEY_PREFIX="benchhttp",
                )
                thread_search.run(
                    Orchestrator(settings=settings, model=OfflineChatModel()), url, args.search
                )
                return
            http_lat, http_wall = asyncio.run(through_http(url, args.runs))
            settings = Settings(
                _env_file=None,
                REDIS_URL=server.url,  # type: ignore[call-arg]
                GRAPHWRIGHT_KEY_PREFIX="benchdirect",
                GRAPHWRIGHT_GRAPHS=PLUGIN,
            )
            orch = Orchestrator(settings=settings, model=OfflineChatModel())
            direct_lat, direct_wall = asyncio.run(through_python(orch, args.runs))
            streams_http = stream_http(url, args.streams)
            streams_direct = stream_direct(orch, args.streams)
        finally:
            for proc in procs:
                proc.terminate()
                proc.wait(timeout=15)
            server.stop()
    rows = {
        "HTTP (1 API + 2 workers)": (http_lat, http_wall),
        "Python API (ainvoke)": (direct_lat, direct_wall),
    }
    print(f"{args.runs} concurrent runs of the agent on the offline model; all completed")
    print(f"{'path':<28}{'p50 ms':>10}{'p99 ms':>10}{'runs/s':>10}")
    for name, (lat, wall) in rows.items():
        print(
            f"{name:<28}{percentile(lat, 0.5) * 1000:>10.0f}{percentile(lat, 0.99) * 1000:>10.0f}"
            f"{len(lat) / wall:>10.1f}"
        )
    print(
        f"HTTP / direct: p50 {percentile(http_lat, 0.5) / percentile(direct_lat, 0.5):.2f}x, "
        f"p99 {percentile(http_lat, 0.99) / percentile(direct_lat, 0.99):.2f}x, throughput "
        f"{(len(http_lat) / http_wall) / (len(direct_lat) / direct_wall):.2f}x "
        f"(median of one run each: {statistics.median(http_lat) * 1000:.0f} vs "
        f"{statistics.median(direct_lat) * 1000:.0f} ms)"
    )
    report_streams(streams_http, streams_direct)


if __name__ == "__main__":
    main()
