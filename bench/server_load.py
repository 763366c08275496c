"""The load `bench.server` puts on a server and what it reads off it.

One cell is one graph, one call kind and one concurrency; its row holds runs/s, latency and the CPU
milliseconds per run of each process (read from `/proc`).

Call kinds, each on a new thread: `wait` (`runs.wait`), `stream` (`runs.stream`,
timed to its first event after the metadata: a token in `messages-tuple` mode for the
chat graphs, the first values for `three`) and `join` (`runs.create` then
`runs.join`).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from bench.server_project import INPUTS, finished

KINDS = ("wait", "stream", "join")
TICK_S = os.sysconf("SC_CLK_TCK")
Row = dict[str, float]


def cpu_ms(pid: int) -> float:
    """User and system CPU of the process and its waited-for children, in milliseconds."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0  # gone (a short-lived child) between the listing and the read
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


async def one_run(client: LangGraphClient, graph: str, kind: str) -> float | None:
    """One run of `kind`; returns the time to its first event for a stream."""
    thread = (await client.threads.create())["thread_id"]
    first: float | None = None
    if kind == "wait":
        values = await client.runs.wait(thread, graph, input=INPUTS[graph])
    elif kind == "join":
        run = await client.runs.create(thread, graph, input=INPUTS[graph])
        values = await client.runs.join(thread, run["run_id"])
    else:
        began = time.perf_counter()
        mode = "values" if graph == "three" else "messages-tuple"
        values = None
        async for part in client.runs.stream(thread, graph, input=INPUTS[graph], stream_mode=mode):
            if part.event == "error":
                raise RuntimeError(f"{graph} stream failed: {part.data}")
            if first is None and part.event != "metadata":
                first = time.perf_counter() - began
            if part.event == "values":
                values = part.data
        if values is None:  # messages-tuple sends no values: read the thread's
            values = (await client.threads.get_state(thread))["values"]
    if not finished(graph, values):
        raise RuntimeError(f"{graph} {kind}: unexpected final values {values!r}")
    return first


async def load(url: str, graph: str, kind: str, runs: int, inflight: int) -> tuple[float, Row]:
    """`runs` runs, `inflight` at a time; returns runs/s and the latency figures."""
    client = get_client(url=url, api_key=None)
    gate = asyncio.Semaphore(inflight)
    took: list[float] = []
    firsts: list[float] = []

    async def one() -> None:
        async with gate:
            began = time.perf_counter()
            first = await one_run(client, graph, kind)
            took.append(time.perf_counter() - began)
            if first is not None:
                firsts.append(first)

    began = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(runs)))
    rate = runs / (time.perf_counter() - began)
    row = {
        "p50 ms": statistics.median(took) * 1000,
        "p95 ms": statistics.quantiles(took, n=20)[-1] * 1000,
    }
    if firsts:
        row["first p50 ms"] = statistics.median(firsts) * 1000
    return rate, row


def cell(
    url: str,
    graph: str,
    kind: str,
    inflight: int,
    runs: int,
    procs: dict[str, Callable[[], list[int]]],
) -> Row:
    """One cell's row: runs/s, latency and CPU ms per run of each process."""
    before = {label: sum(cpu_ms(p) for p in pids()) for label, pids in procs.items()}
    rate, latency = asyncio.run(load(url, graph, kind, runs, inflight))
    after = {label: sum(cpu_ms(p) for p in pids()) for label, pids in procs.items()}
    return (
        {"runs/s": rate}
        | latency
        | {f"cpu {label}": (after[label] - before[label]) / runs for label in procs}
    )


def warm(url: str, graphs: list[str], kinds: list[str]) -> None:
    """Imports, compiled graphs and connections, before anything is measured."""
    for graph in graphs:
        for kind in kinds:
            asyncio.run(load(url, graph, kind, 4, 2))


def show(row: Row) -> str:
    return "  ".join(f"{k} {v:7.1f}" for k, v in row.items())


def ratios(gw: Row, ref: Row) -> Row:
    """Graphwright's figures over the reference's, and the API's CPU as a share of the worker's."""
    cpu = gw["cpu api"] + gw["cpu worker"] + gw["cpu redis"]
    out = {
        "runs/s": gw["runs/s"] / ref["runs/s"],
        "p50": gw["p50 ms"] / ref["p50 ms"],
        "cpu": cpu / ref["cpu server"] if ref["cpu server"] else float("inf"),
        "api/worker %": 100 * gw["cpu api"] / gw["cpu worker"] if gw["cpu worker"] else 0.0,
    }
    if "first p50 ms" in gw and "first p50 ms" in ref:
        out["first p50"] = gw["first p50 ms"] / ref["first p50 ms"]
    return out
