"""The same graph on LangGraph's Agent Server (``langgraph dev``, installed apart by
``scripts/reference-server``) and on graphwright (``serve --queue`` and one
``worker --jobs 10``), in one run: ``runs.wait`` on a new thread each, at 1, 8 and 32 in
flight; runs/s, p50/p95 latency and CPU milliseconds per run of each process (Redis
included), with graphwright's figures as ratios of the reference's.

    python -m bench.server [--runs 64] [--repeat 3]

The graph is a three-node ``StateGraph`` with no model, written to a temporary
``langgraph.json`` project that both servers load.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from langgraph_sdk import get_client

from graphwright.testing.redis_servers import free_port, redis_server

ROOT = Path(__file__).resolve().parents[1]
GRAPH = '''
from typing_extensions import TypedDict
from langgraph.graph import StateGraph, START, END

class State(TypedDict):
    n: int

def step(state: State) -> State:
    return {"n": state["n"] + 1}

builder = StateGraph(State)
for name in ("a", "b", "c"):
    builder.add_node(name, step)
builder.add_edge(START, "a")
builder.add_edge("a", "b")
builder.add_edge("b", "c")
builder.add_edge("c", END)
graph = builder.compile()
'''
CONCURRENCY = (1, 8, 32)
TICK_S = os.sysconf("SC_CLK_TCK")


def cpu_ms(pid: int) -> float:
    """User and system CPU of the process and its waited-for children, in milliseconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:15]) * 1000 / TICK_S


def session_pids(sid: int) -> list[int]:
    """Every live process of a session (a server and whatever it started)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[3]) == sid:
                    found.append(int(entry.name))
            except (OSError, ValueError, IndexError):
                continue
    return found


@contextmanager
def started(args: list[str], env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("w") as out:
        proc = subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=log.parent,
                                start_new_session=True)
        try:
            yield proc
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def wait_ok(url: str) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/ok", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not start")


async def cell(url: str, runs: int, inflight: int) -> tuple[float, list[float]]:
    client = get_client(url=url, api_key=None)
    gate = asyncio.Semaphore(inflight)
    took: list[float] = []

    async def one() -> None:
        async with gate:
            began = time.perf_counter()
            thread = await client.threads.create()
            out = await client.runs.wait(thread["thread_id"], "three", input={"n": 0})
            assert isinstance(out, dict) and out.get("n") == 3, out
            took.append(time.perf_counter() - began)

    began = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(runs)))
    return runs / (time.perf_counter() - began), took


def measure(name: str, url: str, procs: dict[str, Callable[[], list[int]]],
            runs: int) -> dict[int, dict[str, float]]:
    asyncio.run(cell(url, 4, 2))  # warm up: imports, compiled graphs, connections
    results = {}
    for inflight in CONCURRENCY:
        before = {label: sum(cpu_ms(p) for p in pids()) for label, pids in procs.items()}
        rate, took = asyncio.run(cell(url, runs, inflight))
        after = {label: sum(cpu_ms(p) for p in pids()) for label, pids in procs.items()}
        row = {"runs/s": rate, "p50 ms": statistics.median(took) * 1000,
               "p95 ms": statistics.quantiles(took, n=20)[-1] * 1000}
        row |= {f"cpu/run {label}": (after[label] - before[label]) / runs for label in procs}
        results[inflight] = row
        cells = "  ".join(f"{k} {v:8.1f}" for k, v in row.items())
        print(f"{name:12} {inflight:>3} in flight  {cells}", flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    langgraph = subprocess.run([str(ROOT / "scripts" / "reference-server")], check=True,
                               capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="gw-bench-server-") as tmp:
        project = Path(tmp)
        (project / "three.py").write_text(GRAPH)
        (project / "langgraph.json").write_text('{"dependencies": ["."], "graphs": {"three": "./three.py:graph"}}')
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LANGSMITH"))}
        env |= {"LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGSMITH_TRACING": "false",
                "GRAPHWRIGHT_RUN_RATE": "0", "GRAPHWRIGHT_CONFIG": str(project / "langgraph.json")}
        for attempt in range(args.repeat):
            print(f"--- run {attempt + 1}", flush=True)
            ref_port, gw_port = free_port(), free_port()
            with started([langgraph, "dev", "--no-browser", "--no-reload", "--port", str(ref_port),
                          "--host", "127.0.0.1", "--config", str(project / "langgraph.json")],
                         env, project / "dev.log") as dev:
                wait_ok(f"http://127.0.0.1:{ref_port}")
                ref = measure("langgraph dev", f"http://127.0.0.1:{ref_port}",
                              {"server": lambda: session_pids(dev.pid)}, args.runs)
            with redis_server() as redis, \
                    started([sys.executable, "-m", "graphwright", "serve", "--queue", "--port",
                             str(gw_port)], env | {"REDIS_URL": redis.url}, project / "api.log") as api, \
                    started([sys.executable, "-m", "graphwright", "worker", "--jobs", "10"],
                            env | {"REDIS_URL": redis.url}, project / "worker.log") as worker:
                wait_ok(f"http://127.0.0.1:{gw_port}")
                gw = measure("graphwright", f"http://127.0.0.1:{gw_port}",
                             {"api": lambda: session_pids(api.pid),
                              "worker": lambda: session_pids(worker.pid),
                              "redis": lambda: [redis.process.pid]}, args.runs)
            for inflight in CONCURRENCY:
                cpu = sum(v for k, v in gw[inflight].items() if k.startswith("cpu/run"))
                print(f"ratio {inflight:>3} in flight: runs/s {gw[inflight]['runs/s'] / ref[inflight]['runs/s']:.2f}x, "
                      f"p50 {gw[inflight]['p50 ms'] / ref[inflight]['p50 ms']:.2f}x, CPU/run (all processes) "
                      f"{cpu / ref[inflight]['cpu/run server']:.2f}x", flush=True)


if __name__ == "__main__":
    main()
