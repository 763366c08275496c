"""The Python API's cost per run against LangGraph's own on the same graph, saver and Redis.

A 3-node graph with no model, each run on a new thread: `Orchestrator.invoke` and
`ainvoke` (one after another, and ten at a time) against LangGraph's `graph.invoke`
(compiled with graphwright's `RedisSaver`) and `graph.ainvoke` (its `AsyncRedisSaver`)
on one redis-server started for the run. Rounds interleave graphwright and LangGraph; each
figure is per run: process CPU time, wall time, Redis commands, counted twice: by the
server (`INFO commandstats` deltas, the primary figure: it counts the commands a Lua script
runs too) and on the wire (each command the clients of this process pack to send: a script
call is one), and the Redis server's own CPU time (`INFO cpu`), which is what the commands
cost it. Targets (issue 35): CPU and wall <= 1.3x, commands <= the saver's + 12.

    python -m bench.api [--runs 40] [--rounds 5] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import hiredis
import redis
from langgraph.graph import END, START, StateGraph

from graphwright import Orchestrator
from graphwright.checkpoints.redis import AsyncRedisSaver, RedisSaver
from graphwright.graphs.registry import GraphContext, GraphRegistry
from graphwright.project import compile_graph
from graphwright.settings import Settings
from graphwright.testing.redis_servers import start_server
from graphwright.tools.registry import ToolRegistry
from graphwright.tools.runloop import run_loop

AT_ONCE = 10


class State(TypedDict):
    n: int


def step(state: State) -> State:
    return {"n": state["n"] + 1}


def three() -> StateGraph[State]:
    """The graph both sides run: a -> b -> c, each adding one."""
    builder = StateGraph(State)
    for name in ("a", "b", "c"):
        builder.add_node(name, step)
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", "c")
    builder.add_edge("c", END)
    return builder


@dataclass
class Tally:
    """One case's totals over every round."""

    cpu: float = 0.0
    wall: float = 0.0
    commands: int = 0
    wire: int = 0
    redis_cpu: float = 0.0
    runs: int = 0

    def add(
        self, cpu: float, wall: float, commands: int, wire: int, redis_cpu: float, runs: int
    ) -> None:
        self.cpu, self.wall = self.cpu + cpu, self.wall + wall
        self.commands, self.wire = self.commands + commands, self.wire + wire
        self.redis_cpu += redis_cpu
        self.runs += runs


def server_cpu(client: redis.Redis) -> float:
    """The server's CPU time so far (user and system, main thread and others), in seconds."""
    cpu: dict[str, Any] = client.info("cpu")
    return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])


def commands(client: redis.Redis) -> int:
    """Every command the server has run (its own INFO call included, the same each time)."""
    stats: dict[str, Any] = client.info("commandstats")
    return sum(int(v["calls"]) for v in stats.values())


class Wire:
    """Counts the commands this process's clients send, as they pack them.

    Every client here packs each command with `hiredis.pack_command` (redis-py's packer
    with hiredis installed, and the savers' one-buffer batches), once per send: a retried
    command counts again, as it crosses the wire again. `itertools.count` keeps the count
    exact across the threads of the `x10` cases.
    """

    def __init__(self) -> None:
        self.counter = itertools.count()
        self.reads = 0
        packer = hiredis.pack_command
        counter = self.counter

        def counted(cmd: Any) -> bytes:
            next(counter)
            return packer(cmd)

        hiredis.pack_command = counted

    def sent(self) -> int:
        """Commands packed so far (the reads of the count itself left out)."""
        value = next(self.counter) - self.reads
        self.reads += 1
        return value


class Bench:
    """The four ways to run, each as `n` runs one after another or `AT_ONCE` at a time."""

    def __init__(self, url: str, wire: Wire) -> None:
        self.meter, self.wire = redis.Redis.from_url(url), wire
        prefix = "benchapi"
        registry = GraphRegistry()

        def build(ctx: GraphContext) -> Any:
            return compile_graph("three", three(), ctx)

        registry.register("three", build, make_input=None, tools=ToolRegistry)
        self.orch = Orchestrator(
            settings=Settings(redis_url=url, key_prefix=prefix), graphs=registry
        )
        self.saver = RedisSaver(redis.Redis.from_url(url), prefix=prefix)
        self.lg = three().compile(checkpointer=self.saver)
        self.aloop = asyncio.new_event_loop()  # the bench's own loop, as a user's would be
        self.asaver = AsyncRedisSaver.from_url(url, prefix=prefix)
        self.alg = three().compile(checkpointer=self.asaver)
        self.pool = ThreadPoolExecutor(AT_ONCE)

    def close(self) -> None:
        self.pool.shutdown()
        self.aloop.run_until_complete(self.asaver.client.aclose())
        self.aloop.close()
        self.orch.close()

    # --- one run of each --------------------------------------------------------

    def gw_invoke(self) -> None:
        result = self.orch.invoke("three", {"n": 0})
        assert result.status == "completed", result

    def lg_invoke(self) -> None:
        out = self.lg.invoke({"n": 0}, {"configurable": {"thread_id": uuid.uuid4().hex}})
        assert out["n"] == 3, out

    async def gw_ainvoke(self) -> None:
        result = await self.orch.ainvoke("three", {"n": 0})
        assert result.status == "completed", result

    async def lg_ainvoke(self) -> None:
        out = await self.alg.ainvoke({"n": 0}, {"configurable": {"thread_id": uuid.uuid4().hex}})
        assert out["n"] == 3, out

    # --- n runs -------------------------------------------------------------------

    def sequential(self, one: Callable[[], None], n: int) -> None:
        for _ in range(n):
            one()

    def threaded(self, one: Callable[[], None], n: int) -> None:
        def some(k: int) -> None:
            for _ in range(k):
                one()

        shares = [n // AT_ONCE + (i < n % AT_ONCE) for i in range(AT_ONCE)]
        for f in [self.pool.submit(some, k) for k in shares]:
            f.result()

    def asequential(self, one: Callable[[], Any], n: int) -> None:
        async def go() -> None:
            for _ in range(n):
                await one()

        self.aloop.run_until_complete(go())

    def gathered(self, one: Callable[[], Any], n: int) -> None:
        async def go() -> None:
            gate = asyncio.Semaphore(AT_ONCE)

            async def bounded() -> None:
                async with gate:
                    await one()

            await asyncio.gather(*(bounded() for _ in range(n)))

        self.aloop.run_until_complete(go())

    def measure(
        self, how: Callable[[Callable[..., Any], int], None], one: Any, n: int
    ) -> tuple[float, float, int, int, float]:
        before_cmds = commands(self.meter)
        before_redis = server_cpu(self.meter)
        before_wire = self.wire.sent()
        cpu0, wall0 = time.process_time(), time.perf_counter()
        how(one, n)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        wire = self.wire.sent() - before_wire
        redis_cpu = server_cpu(self.meter) - before_redis
        return cpu, wall, commands(self.meter) - before_cmds - 3, wire, redis_cpu  # our 3 INFOs


CASES = [
    ("invoke", "sequential", "gw_invoke", "lg_invoke"),
    ("ainvoke", "asequential", "gw_ainvoke", "lg_ainvoke"),
    (f"invoke x{AT_ONCE}", "threaded", "gw_invoke", "lg_invoke"),
    (f"ainvoke x{AT_ONCE}", "gathered", "gw_ainvoke", "lg_ainvoke"),
]


def one_repeat(bench: Bench, runs: int, rounds: int) -> dict[str, tuple[Tally, Tally]]:
    tallies = {name: (Tally(), Tally()) for name, *_ in CASES}
    for r in range(rounds):
        for name, how, gw, lg in CASES:
            sides = [(0, gw), (1, lg)] if r % 2 == 0 else [(1, lg), (0, gw)]
            for index, method in sides:
                got = bench.measure(getattr(bench, how), getattr(bench, method), runs)
                tallies[name][index].add(*got, runs)
    return tallies


def report(repeat: int, tallies: dict[str, tuple[Tally, Tally]]) -> None:
    print(f"\nrun {repeat}")
    print(
        f"{'case':<12} {'CPU ms gw':>9} {'lg':>6} {'ratio':>6}   {'wall ms gw':>10} {'lg':>6} "
        f"{'ratio':>6}   {'cmds gw':>7} {'lg':>5} {'+':>4}   {'wire gw':>7} {'lg':>5} {'+':>4}"
        f"   {'redis us gw':>11} {'lg':>5} {'ratio':>6}"
    )
    for name, (gw, lg) in tallies.items():
        gcpu, lcpu = gw.cpu / gw.runs * 1e3, lg.cpu / lg.runs * 1e3
        gwall, lwall = gw.wall / gw.runs * 1e3, lg.wall / lg.runs * 1e3
        gc, lc = gw.commands / gw.runs, lg.commands / lg.runs
        gs, ls = gw.wire / gw.runs, lg.wire / lg.runs
        gr, lr = gw.redis_cpu / gw.runs * 1e6, lg.redis_cpu / lg.runs * 1e6
        print(
            f"{name:<12} {gcpu:>9.2f} {lcpu:>6.2f} {gcpu / lcpu:>5.2f}x   {gwall:>10.2f} "
            f"{lwall:>6.2f} {gwall / lwall:>5.2f}x   {gc:>7.1f} {lc:>5.1f} {gc - lc:>+4.0f}   "
            f"{gs:>7.1f} {ls:>5.1f} {gs - ls:>+4.0f}   {gr:>11.0f} {lr:>5.0f} {gr / lr:>5.2f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40, help="runs per case per round")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds per repeat")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    run_loop()
    with tempfile.TemporaryDirectory(prefix="bench-api-") as workdir:
        server = start_server(Path(workdir))
        try:
            bench = Bench(server.url, Wire())
            try:
                one_repeat(bench, 10, 1)  # warm: imports, scripts, compiled graphs, pools
                print(
                    f"3-node graph, no model; {args.runs} runs per case per round, "
                    f"{args.rounds} rounds; threads alive: {threading.active_count()}"
                )
                for repeat in range(1, args.repeats + 1):
                    report(repeat, one_repeat(bench, args.runs, args.rounds))
            finally:
                bench.close()
        finally:
            server.stop()


if __name__ == "__main__":
    main()
