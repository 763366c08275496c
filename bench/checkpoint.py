"""Checkpoint savers on an agent-shaped graph, measured side by side in one run.

    python -m bench.checkpoint [--steps 20] [--threads 20] [--repeat 5] [--runs 3]

Per super-step (a plan or a tool node, `durability="sync"`): milliseconds for
RedisSaver, AsyncRedisSaver, LangGraph's InMemorySaver and SqliteSaver, and
ValkeySaver from `langgraph-checkpoint-aws` when installed (`pip install -e
'.[bench]'`), each as a ratio to InMemorySaver of the same mode. Every thread is run
by every saver in a shuffled order before the next thread starts, so the noise of a
shared machine falls on all savers alike. Two floors: InMemorySaver plus one SET per
put, and plus one more per `put_writes` (LangGraph saves a task's writes as the task
ends, on a thread of its own, beside the checkpoint's put: any saver that stores them
when asked pays that round trip too); the second also on the asyncio client, for
AsyncRedisSaver. Also: the Redis server's time for every Redis
saver; bytes per thread with messages as a list and as a DeltaChannel (without and
with LangGraph's snapshots); and, with a TTL, the cost of a put at step 20 and 200.

Server time is read from `INFO commandstats`: the microseconds of every command (a
script call's time includes the commands it runs, which are counted again: an
overestimate for savers that use scripts; graphwright's run one per `invoke`), and,
as a cross-check, the main thread's CPU time from `INFO cpu` (parsing, I/O and idle
wake-ups included). `cmds` counts every command the server ran. The two disagree
on values of fresh memory: a hash field's value is copied by its command (HSET), whose
page faults commandstats charge to it, while a string's value is the parsed argument
itself, copied before any command runs (a 20 KB value into fresh memory: HSET 37.5 µs,
SET 2.6 µs in commandstats; 89 and 82 µs of server CPU per command).
Each run checks the targets of the saver's issue as ratios; `--runs` repeats it.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sqlite3
import statistics
import sys
import tempfile
import threading
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

from graphwright.checkpoints.redis import AsyncRedisSaver, RedisSaver
from graphwright.testing.redis_servers import start_server

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
    """Messages as a DeltaChannel that takes no snapshot within these runs.

    200 steps are 400 updates: what the saver itself stores per step.
    """

    messages: Annotated[list[AnyMessage], DeltaChannel(_concat, snapshot_frequency=1000)]
    step: int


class SnapshotState(TypedDict):
    """A DeltaChannel snapshotting every 50 updates.

    A snapshot is the whole list, so the bytes of a thread grow with the square of its steps by
    LangGraph's design (bounded replay for a snapshot per 50 updates) whatever the saver does.
    """

    messages: Annotated[list[AnyMessage], DeltaChannel(_concat, snapshot_frequency=50)]
    step: int


SIZE_STATES: dict[str, type] = {
    "list": ListState,
    "DeltaChannel": DeltaState,
    "Delta, snapshot/50": SnapshotState,
}


def build(saver: Any, steps: int, state: type = ListState) -> Any:
    """Plan -> tool -> plan ... : an AI message, then a ~1 KB tool result, per step."""

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


def _config(thread: str | None = None) -> dict[str, Any]:
    thread = thread or f"b-{uuid.uuid4().hex}"
    return {"configurable": {"thread_id": thread}, "recursion_limit": 10_000}


def invoke_ms(graph: Any, steps: int, loop: asyncio.AbstractEventLoop | None) -> float:
    """Milliseconds per super-step of one fresh thread (2 per agent step).

    Async graphs run on `loop`.
    """
    start = time.perf_counter()
    if loop is None:
        graph.invoke({"messages": [], "step": 0}, _config(), durability="sync")
    else:
        loop.run_until_complete(
            graph.ainvoke({"messages": [], "step": 0}, _config(), durability="sync")
        )
    return (time.perf_counter() - start) * 1000 / (2 * steps)


class ServerMeter:
    """Server time of what runs between `start` and `stop`, per super-step."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    def start(self) -> None:
        self.client.config_resetstat()
        self.cpu = self._cpu()

    def _cpu(self) -> float:
        info = self.client.info("cpu")
        return float(info["used_cpu_user_main_thread"]) + float(info["used_cpu_sys_main_thread"])

    def stop(self, supersteps: int) -> dict[str, float]:
        cpu = self._cpu() - self.cpu
        stats = {k[len("cmdstat_") :]: v for k, v in self.client.info("commandstats").items()}
        stats = {k: v for k, v in stats.items() if not k.startswith(("config", "info"))}
        return {
            "usec": sum(v["usec"] for v in stats.values()) / supersteps,
            "cpu_usec": cpu * 1e6 / supersteps,
            "commands": sum(v["calls"] for v in stats.values()) / supersteps,
        }


def thread_bytes(client: redis.Redis, saver: RedisSaver, thread: str) -> tuple[int, int]:
    """Bytes of the thread's keys, and of them those of its channel values."""
    keys = [*saver.keys.saver_keys(thread), saver.keys.registry(thread)]
    sizes = {k: int(client.memory_usage(k, samples=0) or 0) for k in keys}
    return sum(sizes.values()), sizes[saver.keys.blobs(thread)]


def stored_bytes(client: redis.Redis, steps: int, state: type) -> tuple[int, int]:
    saver = RedisSaver(client, prefix=f"size{uuid.uuid4().hex[:6]}")
    config = _config()
    build(saver, steps, state).invoke({"messages": [], "step": 0}, config)
    return thread_bytes(client, saver, config["configurable"]["thread_id"])


class MeteredSaver(RedisSaver):
    """RedisSaver that reads the server's counters around each `put` in a window.

    LangGraph runs a task's `put_writes` beside the next `put`: a lock keeps them apart here, so a
    window holds the put's commands alone.
    """

    meter: ServerMeter
    window: list[dict[str, float]] | None = None
    alone = threading.Lock()

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        with self.alone:
            if self.window is None:
                return super().put(config, checkpoint, metadata, new_versions)
            self.meter.start()
            out = super().put(config, checkpoint, metadata, new_versions)
            self.window.append(self.meter.stop(1))
            return out

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        with self.alone:
            super().put_writes(config, writes, task_id, task_path)


def ttl_step_cost(client: redis.Redis, meter: ServerMeter) -> dict[int, dict[str, float]]:
    """Server cost of a `put` of one thread with a TTL, at step 20 and at step 200.

    The mean of the 40 puts of the next 20 steps (a DeltaChannel that takes no snapshot in them, so
    every put stores alike and only the thread's length differs).
    """
    saver = MeteredSaver(client, prefix=f"ttl{uuid.uuid4().hex[:6]}", ttl_s=3600)
    saver.meter = meter
    config = _config()
    out: dict[int, dict[str, float]] = {}
    done = 0
    for at in (20, 200):
        build(saver, at, DeltaState).invoke({"messages": [], "step": done}, config)
        saver.window = []
        build(saver, at + 20, DeltaState).invoke({"messages": [], "step": at}, config)
        puts, saver.window = saver.window[1:], None  # the first is the input's checkpoint
        out[at] = {k: statistics.fmean(p[k] for p in puts) for k in puts[0]}
        done = at + 20
    return out


class FloorSaver(InMemorySaver):
    """InMemorySaver plus one round trip per checkpoint.

    What any Redis saver must pay; with `writes`, one more per `put_writes`, which LangGraph runs
    beside the put.
    """

    def __init__(self, client: redis.Redis, *, writes: bool = False) -> None:
        super().__init__()
        self.client = client
        self.floor_writes = writes

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        out = super().put(config, checkpoint, metadata, new_versions)
        self.client.set("floor", b"x" * 2048)
        return out

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        super().put_writes(config, writes, task_id, task_path)
        if self.floor_writes:
            self.client.set("floor-w", b"x" * 1024)


class AsyncFloorSaver(InMemorySaver):
    """The second floor for an async saver.

    Async InMemorySaver plus the same two round trips (one per put, one per `put_writes`) on the
    asyncio client.
    """

    def __init__(self, client: aredis.Redis) -> None:
        super().__init__()
        self.aclient = client

    async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        out = self.put(config, checkpoint, metadata, new_versions)
        await self.aclient.set("floor", b"x" * 2048)
        return out

    async def aput_writes(
        self, config: Any, writes: Any, task_id: str, task_path: str = ""
    ) -> None:
        self.put_writes(config, writes, task_id, task_path)
        await self.aclient.set("floor-w", b"x" * 1024)


FLOOR_1 = "floor: InMemory + 1 SET"
FLOOR_2 = "floor: + 1 SET per writes"
FLOOR_2_ASYNC = "floor (async): 2 SETs"


def savers(url: str, tmp: Path) -> dict[str, Callable[[], Any]]:
    """Sync savers by name, each a maker of a fresh one."""
    client = redis.Redis.from_url(url)
    made: dict[str, Callable[[], Any]] = {
        "InMemorySaver": InMemorySaver,
        FLOOR_1: lambda: FloorSaver(client),
        FLOOR_2: lambda: FloorSaver(client, writes=True),
        "SqliteSaver": lambda: SqliteSaver(
            sqlite3.connect(tmp / f"{uuid.uuid4().hex}.sqlite", check_same_thread=False)
        ),
        "RedisSaver": lambda: RedisSaver(client, prefix="bench"),
    }
    try:
        from langgraph_checkpoint_aws.checkpoint.valkey import ValkeySaver
        from valkey import Valkey

        vclient = Valkey.from_url(url.replace("redis://", "valkey://"))
        made["ValkeySaver"] = lambda: ValkeySaver(vclient)
    except ImportError:
        print("ValkeySaver not installed: pip install -e '.[bench]' to compare with it\n")
    return made


def one_run(url: str, tmp: Path, steps: int, threads: int, repeat: int) -> dict[str, Any]:
    """Every saver on the same threads.

    Each thread is run by every saver in a shuffled order before the next, so the machine's noise
    falls on all of them alike.
    """
    client = redis.Redis.from_url(url)
    meter = ServerMeter(client)
    loop = asyncio.new_event_loop()
    aclient = aredis.Redis.from_url(url)
    makers: dict[str, tuple[Callable[[], Any], bool]] = {
        name: (make, False) for name, make in savers(url, tmp).items()
    }
    makers["InMemorySaver (async)"] = (InMemorySaver, True)
    makers[FLOOR_2_ASYNC] = (lambda: AsyncFloorSaver(aclient), True)
    makers["AsyncRedisSaver"] = (lambda: AsyncRedisSaver(aclient, prefix="bench"), True)
    run_on = {name: loop if is_async else None for name, (_, is_async) in makers.items()}

    def graph_of(name: str, n: int = steps) -> Any:
        return build(makers[name][0](), n)

    for name in makers:  # warm imports, connections and scripts
        invoke_ms(graph_of(name, 2), 2, run_on[name])
    server: dict[str, dict[str, float]] = {}
    for name in makers:  # the server's counters are global: one saver at a time
        if "Redis" in name or "Valkey" in name or name.startswith("floor"):
            graph = graph_of(name)
            meter.start()
            for _ in range(threads):
                invoke_ms(graph, steps, run_on[name])
            server[name] = meter.stop(2 * steps * threads)
    samples: dict[str, list[float]] = {name: [] for name in makers}
    order = random.Random(7)
    for _ in range(repeat):
        graphs = {name: graph_of(name) for name in makers}
        for _ in range(threads):
            names = list(makers)
            order.shuffle(names)
            for name in names:
                samples[name].append(invoke_ms(graphs[name], steps, run_on[name]))
    ms = {name: statistics.median(values) for name, values in samples.items()}
    sizes = {
        label: [stored_bytes(client, n, state) for n in (20, 60, 200)]
        for label, state in SIZE_STATES.items()
    }
    ttl = ttl_step_cost(client, meter)
    loop.run_until_complete(aclient.aclose())
    loop.close()
    client.close()
    return {"ms": ms, "server": server, "sizes": sizes, "ttl": ttl}


def report(result: dict[str, Any], steps: int, threads: int, repeat: int) -> dict[str, bool]:
    ms, server = result["ms"], result["server"]
    base, abase = ms["InMemorySaver"], ms["InMemorySaver (async)"]
    print(
        f"agent-shaped graph: {steps} steps, median of {repeat} x {threads} threads, each run"
        " by every saver in turn"
    )
    print(f"{'saver':<24}{'ms/step':>9}{'x InMem':>9}{'srv µs':>9}{'cpu µs':>9}{'cmds':>7}")
    for name, value in ms.items():
        ratio = value / (abase if "async" in name.lower() else base)
        s = server.get(name)
        cols = f"{s['usec']:>9.1f}{s['cpu_usec']:>9.1f}{s['commands']:>7.2f}" if s else ""
        print(f"{name:<24}{value:>9.3f}{ratio:>9.2f}{cols}")
    floor = ms[FLOOR_2]
    print(
        f"\nRedisSaver / {FLOOR_2}: {ms['RedisSaver'] / floor:.2f}"
        f" (the floor of one round trip per put and per put_writes: {floor / base:.2f}x InMemory)"
    )
    afloor = ms[FLOOR_2_ASYNC]
    print(
        f"AsyncRedisSaver / {FLOOR_2_ASYNC}: {ms['AsyncRedisSaver'] / afloor:.2f}"
        f" (the same floor on the asyncio client: {afloor / abase:.2f}x async InMemory)"
    )
    print(
        f"server CPU per step, RedisSaver / {FLOOR_2}:"
        f" {server['RedisSaver']['cpu_usec'] / server[FLOOR_2]['cpu_usec']:.2f}"
    )
    if "ValkeySaver" in server:
        mine, theirs = server["RedisSaver"], server["ValkeySaver"]
        print(
            "server per step, RedisSaver / ValkeySaver:"
            f" CPU {mine['cpu_usec'] / theirs['cpu_usec']:.2f},"
            f" commandstats {mine['usec'] / theirs['usec']:.2f}"
        )
    print("\nbytes per thread        20 steps   60 steps  200 steps   per step 20-60, 60-200")
    for label, sizes in result["sizes"].items():
        for part, pick in (("", lambda t: t[0]), (" w/o values", lambda t: t[0] - t[1])):
            b20, b60, b200 = (pick(t) for t in sizes)
            print(
                f"{label + part:<21}{b20:>11,}{b60:>11,}{b200:>11,}"
                f"   {(b60 - b20) / 40:>8.0f} {(b200 - b60) / 140:>8.0f}"
            )
    print("\nwith a TTL, one put (mean of 40)       µs   cpu µs   commands")
    for at, s in result["ttl"].items():
        print(
            f"  at step {at:<3}{'':<24}{s['usec']:>5.1f}{s['cpu_usec']:>9.1f}{s['commands']:>11.2f}"
        )
    redis_ms = ms["RedisSaver"]
    d20, d60, d200 = (total for total, _ in result["sizes"]["DeltaChannel"])
    t20, t200 = result["ttl"][20], result["ttl"][200]
    targets = {
        "RedisSaver <= 1.25x InMemorySaver": redis_ms <= 1.25 * base,
        "RedisSaver >= 1.3x faster than SqliteSaver": ms["SqliteSaver"] >= 1.3 * redis_ms,
        "RedisSaver server <= 30 µs/step": server["RedisSaver"]["usec"] <= 30,
        "AsyncRedisSaver <= 1.1x its two-round-trip floor": ms["AsyncRedisSaver"] <= 1.1 * afloor,
        "DeltaChannel bytes linear in steps": abs((d200 - d60) / 140 - (d60 - d20) / 40)
        <= 0.25 * (d60 - d20) / 40,
        "TTL: commands per put at step 200 == at 20": t20["commands"] == t200["commands"],
        "TTL: server µs per put at step 200 <= 1.25x at 20": t200["usec"] <= 1.25 * t20["usec"],
    }
    if "ValkeySaver" in ms:
        targets["RedisSaver >= 1.3x faster than ValkeySaver"] = ms["ValkeySaver"] >= 1.3 * redis_ms
    print()
    for name, ok in targets.items():
        print(f"  [{'met' if ok else 'MISSED'}] {name}")
    return targets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--threads", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    held: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        server = start_server(Path(tmp) / "redis")
        try:
            for run in range(args.runs):
                print(f"\n=== run {run + 1} of {args.runs} ===")
                result = one_run(server.url, Path(tmp), args.steps, args.threads, args.repeat)
                for name, ok in report(result, args.steps, args.threads, args.repeat).items():
                    held[name] = held.get(name, 0) + ok
        finally:
            server.stop()
    if args.runs > 1:
        print(f"\ntargets held in {args.runs} runs:")
        for name, n in held.items():
            print(f"  {n}/{args.runs}  {name}")


if __name__ == "__main__":
    main()
