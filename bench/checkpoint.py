"""Checkpoint savers on an agent-shaped graph, measured side by side in one run.

    python -m bench.checkpoint [--steps 40] [--repeat 5]

Prints milliseconds per super-step for RedisSaver, AsyncRedisSaver, LangGraph's
InMemorySaver and SqliteSaver, each as a ratio to InMemorySaver measured in the same
run; Redis commands and round trips per super-step; bytes stored per thread at 20
and 60 steps with messages as a list and as a DeltaChannel; and a floor: one
pipelined SET of the same bytes a super-step writes.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import redis
import redis.asyncio as aredis
from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from checkpoints.redis import AsyncRedisSaver, RedisSaver
from tests.redis_servers import start_server

TOOL_RESULT = ("order A1001 shipped, tracking SF1001, status in transit. " * 18)[:1000]


class ListState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    step: int


def _concat(state: list[Any], writes: Sequence[list[Any]]) -> list[Any]:
    out = list(state)
    for w in writes:
        out.extend(w)
    return out


class DeltaState(TypedDict):
    messages: Annotated[list[AnyMessage], DeltaChannel(_concat, snapshot_frequency=50)]
    step: int


def build(saver: Any, steps: int, state: type = ListState) -> Any:
    """plan -> tool -> plan ... : an AI message, then a ~1 KB tool result, per step."""

    def plan(s: Any) -> dict[str, Any]:
        call = {"name": "get_order", "args": {"order_id": "A1001"}, "id": f"c{s['step']}"}
        return {"messages": [AIMessage(content="", tool_calls=[call])]}

    def tool(s: Any) -> dict[str, Any]:
        msg = ToolMessage(content=TOOL_RESULT, tool_call_id=f"c{s['step']}")
        return {"messages": [msg], "step": s["step"] + 1}

    b = StateGraph(state)
    b.add_node("plan", plan)
    b.add_node("tool", tool)
    b.add_edge(START, "plan")
    b.add_edge("plan", "tool")
    b.add_conditional_edges("tool", lambda s: "plan" if s["step"] < steps else END, ["plan", END])
    return b.compile(checkpointer=saver)


def _config() -> dict[str, Any]:
    return {"configurable": {"thread_id": f"b-{uuid.uuid4().hex}"}, "recursion_limit": 10_000}


def time_sync(make: Callable[[], Any], steps: int, repeat: int) -> float:
    """Median milliseconds per super-step (2 super-steps per agent step)."""
    samples = []
    for _ in range(repeat):
        graph = build(make(), steps)
        start = time.perf_counter()
        graph.invoke({"messages": [], "step": 0}, _config())
        samples.append((time.perf_counter() - start) * 1000 / (2 * steps))
    return statistics.median(samples)


def time_async(url: str, steps: int, repeat: int) -> float:
    """Like time_sync, with ainvoke and an asyncio client made inside the loop."""

    async def once(aclient: aredis.Redis) -> float:
        graph = build(AsyncRedisSaver(aclient, prefix="bench"), steps)
        start = time.perf_counter()
        await graph.ainvoke({"messages": [], "step": 0}, _config())
        return (time.perf_counter() - start) * 1000 / (2 * steps)

    async def all_runs() -> list[float]:
        aclient = aredis.Redis.from_url(url)
        try:
            return [await once(aclient) for _ in range(repeat)]
        finally:
            await aclient.aclose()

    return statistics.median(asyncio.run(all_runs()))


def thread_bytes(client: redis.Redis, saver: RedisSaver, thread: str) -> int:
    keys = [k.decode() for k in client.smembers(saver.keys.registry(thread))]
    return sum(int(client.memory_usage(k, samples=0) or 0) for k in keys)


def stored_bytes(client: redis.Redis, steps: int, state: type) -> int:
    saver = RedisSaver(client, prefix=f"size{uuid.uuid4().hex[:6]}")
    config = _config()
    build(saver, steps, state).invoke({"messages": [], "step": 0}, config)
    return thread_bytes(client, saver, config["configurable"]["thread_id"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        server = start_server(Path(tmp) / "redis")
        try:
            run(server.url, Path(tmp), args.steps, args.repeat)
        finally:
            server.stop()


def run(url: str, tmp: Path, steps: int, repeat: int) -> None:
    client = redis.Redis.from_url(url)
    sqlite_path = tmp / "bench.sqlite"

    def sqlite_saver() -> SqliteSaver:
        return SqliteSaver(sqlite3.connect(sqlite_path, check_same_thread=False))

    build(InMemorySaver(), 2).invoke({"messages": [], "step": 0}, _config())  # warm imports
    # Rounds interleave the savers, so machine noise hits each of them alike.
    samples: dict[str, list[float]] = {}
    for _ in range(repeat):
        for name, ms in (
            ("InMemorySaver", time_sync(InMemorySaver, steps, 1)),
            ("SqliteSaver (file)", time_sync(sqlite_saver, steps, 1)),
            ("RedisSaver", time_sync(lambda: RedisSaver(client, prefix="bench"), steps, 1)),
            ("AsyncRedisSaver", time_async(url, steps, 1)),
        ):
            samples.setdefault(name, []).append(ms)
    results = {name: statistics.median(values) for name, values in samples.items()}
    base = results["InMemorySaver"]

    # Commands and round trips per super-step, read from the server's own counters.
    client.config_resetstat()
    saver = RedisSaver(client, prefix="count")
    config = _config()
    build(saver, steps).invoke({"messages": [], "step": 0}, config)
    stats = client.info("commandstats")
    client.config_resetstat()
    commands = sum(v["calls"] for k, v in stats.items() if k not in ("cmdstat_config",))
    transactions = sum(
        stats.get(f"cmdstat_{name}", {}).get("calls", 0) for name in ("exec", "evalsha", "eval")
    )
    per_step_bytes = thread_bytes(client, saver, config["configurable"]["thread_id"]) / (2 * steps)

    # Floor: one pipelined SET of the bytes a super-step stores, in a transaction.
    payload = b"x" * int(per_step_bytes)
    floor = []
    for _ in range(repeat):
        start = time.perf_counter()
        for i in range(2 * steps):
            pipe = client.pipeline(transaction=True)
            pipe.set(f"floor:{i}", payload)
            pipe.execute()
        floor.append((time.perf_counter() - start) * 1000 / (2 * steps))
    floor_ms = statistics.median(floor)

    print(f"agent-shaped graph, {steps} steps = {2 * steps} super-steps, median of {repeat}\n")
    print(f"{'saver':<22}{'ms/super-step':>15}{'x InMemory':>12}")
    for name, ms in results.items():
        print(f"{name:<22}{ms:>15.3f}{ms / base:>12.2f}")
    print(f"{'floor: 1 SET in MULTI':<22}{floor_ms:>15.3f}{floor_ms / base:>12.2f}")
    print()
    print(f"commands the server ran per super-step (calls inside scripts included): {commands / (2 * steps):.2f}")
    print(f"atomic writes (script or MULTI/EXEC) per super-step: {transactions / (2 * steps):.2f}")
    print()
    print(f"{'bytes stored per thread':<28}{'20 steps':>12}{'60 steps':>12}{'60/20':>8}")
    for label, state in (("messages as list", ListState), ("messages as DeltaChannel", DeltaState)):
        b20, b60 = stored_bytes(client, 20, state), stored_bytes(client, 60, state)
        print(f"{label:<28}{b20:>12,}{b60:>12,}{b60 / b20:>8.2f}")
    client.close()


if __name__ == "__main__":
    main()
