"""The floor under `bench.server`'s CPU figures.

The same project graph run by LangGraph itself in one process, with no server around it, `jobs` runs
at a time on one event loop (as a worker with `--jobs`), `astream` in the modes a `runs.wait` run
streams.

Two floors: `graph` (no checkpointer: LangGraph, the model client and the tool alone)
and `saver` (every step checkpointed by `AsyncRedisSaver` to the Redis at `--redis`,
whose own CPU the caller adds). A server that persists every step to Redis cannot spend
less per run than `saver` plus that Redis CPU, whatever its HTTP and queue cost.

Run as a child process of `bench.server` so that its CPU is its own:

    python -m bench.server_floor CONFIG GRAPH --floor saver --redis URL [--runs 64] [--jobs 10]

Prints one JSON line: `{"runs/s": ..., "cpu ms": ...}` (CPU per run of this process).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import time
import uuid
from pathlib import Path
from typing import Any

from bench.server_project import INPUTS, finished
from graphwright.project import load_attribute


def cpu_ms() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return (usage.ru_utime + usage.ru_stime) * 1000


async def load(graph: Any, name: str, runs: int, jobs: int) -> float:
    """`runs` runs, `jobs` at a time; returns runs/s. Each run's end is checked."""
    gate = asyncio.Semaphore(jobs)

    async def one() -> None:
        async with gate:
            config = {"configurable": {"thread_id": str(uuid.uuid4())}}
            values = None
            async for mode, chunk in graph.astream(
                INPUTS[name], config, stream_mode=["updates", "values"]
            ):
                if mode == "values":
                    values = chunk
            if not finished(name, _plain(values)):
                raise RuntimeError(f"{name}: unexpected final values {values!r}")

    began = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(runs)))
    return runs / (time.perf_counter() - began)


def _plain(values: Any) -> Any:
    """Final values as the server sends them (messages as dicts), for `finished`."""
    if isinstance(values, dict) and "messages" in values:
        return values | {"messages": [m.model_dump() for m in values["messages"]]}
    return values


async def measure(args: argparse.Namespace) -> dict[str, float]:
    config = Path(args.config)
    target = json.loads(await asyncio.to_thread(config.read_text))["graphs"][args.graph]
    built = load_attribute(target, config.parent)
    saver = None
    if args.floor == "saver":
        from graphwright.checkpoints.redis_async import AsyncRedisSaver

        saver = AsyncRedisSaver.from_url(args.redis)
    graph = built.builder.compile(checkpointer=saver)
    await load(graph, args.graph, 8, 4)  # imports, connections
    before = cpu_ms()
    rate = await load(graph, args.graph, args.runs, args.jobs)
    return {"runs/s": rate, "cpu ms": (cpu_ms() - before) / args.runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config")
    parser.add_argument("graph")
    parser.add_argument("--floor", choices=("graph", "saver"), default="graph")
    parser.add_argument("--redis", help="the Redis URL (--floor saver)")
    parser.add_argument("--runs", type=int, default=64)
    parser.add_argument("--jobs", type=int, default=10)
    args = parser.parse_args()
    if args.floor == "saver" and not args.redis:
        parser.error("--floor saver needs --redis")
    print(json.dumps(asyncio.run(measure(args))), flush=True)


if __name__ == "__main__":
    main()
