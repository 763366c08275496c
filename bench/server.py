"""The same graphs on LangGraph's Agent Server and on graphwright, in one run.

The reference is `langgraph dev`, installed apart by `scripts/reference-server`, with its
default 10 jobs; graphwright runs `serve --queue` and one `worker` with its default `--jobs`
(32; `--jobs` here changes it). The graphs: a three-node graph with no model and a
`ChatOpenAI` agent with one tool call against a scripted model answering after 0 ms and after 200
ms; `runs.wait`, `runs.stream` and `runs.create` + `runs.join` on a new thread each, at 1, 8 and 32
in flight. Prints runs/s, p50/p95 latency (and time to the first streamed event) and CPU
milliseconds per run of each process (Redis included), then graphwright's figures as ratios of the
reference's and the API's CPU per run as a share of the worker's. Then the floor
(`bench/server_floor.py`): each graph run by LangGraph in one process, alone and with every step
saved to Redis, and every cell's CPU per run against it; and the API's CPU per request that does
nothing (`GET /ok`), two of which every run costs. Last, per cell, the issue's measure: the
worker's CPU per run (its Redis's included) beyond the graph saved to Redis, against the
reference's whole server beyond the graph alone.

    python -m bench.server [--runs 64] [--repeat 3] [--graphs three,chat_200ms]
                           [--kinds wait,stream,join] [--inflight 1,8,32] [--jobs 32]

`--runs` is the count at 32 in flight; a cell with fewer in flight runs proportionally
fewer, at least 16. The graphs (`bench/server_project.py`) are a temporary
`langgraph.json` project both servers load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from bench import server_project
from bench.server_load import KINDS, Row, cell, cpu_ms, ratios, session_pids, show, warm
from graphwright.settings import WORKER_JOBS
from graphwright.testing.redis_servers import free_port, redis_server

ROOT = Path(__file__).resolve().parents[1]
Cells = dict[tuple[str, str, int], Row]


@contextmanager
def started(args: list[str], env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A server in a session of its own, stopped with everything it started."""
    with log.open("w") as out:
        proc = subprocess.Popen(
            args,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=log.parent,
            start_new_session=True,
        )
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


def measure(
    name: str, url: str, procs: dict[str, Callable[[], list[int]]], args: argparse.Namespace
) -> Cells:
    """Every chosen cell on one server, after a warm-up."""
    warm(url, args.graphs, args.kinds)
    results: Cells = {}
    for graph in args.graphs:
        for kind in args.kinds:
            for inflight in args.inflight:
                runs = max(16, args.runs * inflight // 32)
                row = cell(url, graph, kind, inflight, runs, procs)
                results[graph, kind, inflight] = row
                print(f"{name:13} {graph:10} {kind:6} {inflight:>3}  {show(row)}", flush=True)
    return results


def reference(langgraph: str, config: Path, env: dict[str, str], args: argparse.Namespace) -> Cells:
    port = free_port()
    with started(
        [
            langgraph,
            "dev",
            "--no-browser",
            "--no-reload",
            "--port",
            str(port),
            "--host",
            "127.0.0.1",
            "--n-jobs-per-worker",
            "10",
            "--config",
            str(config),
        ],
        env,
        config.parent / "dev.log",
    ) as dev:
        wait_ok(f"http://127.0.0.1:{port}")
        return measure(
            "langgraph dev",
            f"http://127.0.0.1:{port}",
            {"server": lambda: session_pids(dev.pid)},
            args,
        )


def graphwright(config: Path, env: dict[str, str], args: argparse.Namespace) -> Cells:
    port = free_port()
    with redis_server() as redis:
        env = env | {"REDIS_URL": redis.url}
        with (
            started(
                [sys.executable, "-m", "graphwright", "serve", "--queue", "--port", str(port)],
                env,
                config.parent / "api.log",
            ) as api,
            started(
                [sys.executable, "-m", "graphwright", "worker", "--jobs", str(args.jobs)],
                env,
                config.parent / "worker.log",
            ) as worker,
        ):
            wait_ok(f"http://127.0.0.1:{port}")
            cells = measure(
                "graphwright",
                f"http://127.0.0.1:{port}",
                {
                    "api": lambda: session_pids(api.pid),
                    "worker": lambda: session_pids(worker.pid),
                    "redis": lambda: [redis.process.pid],
                },
                args,
            )
            bare = bare_request_ms(f"http://127.0.0.1:{port}", lambda: session_pids(api.pid))
            for row in cells.values():
                row["bare api"] = 2 * bare  # a run is two requests (the thread, the run)
            print(f"graphwright   API CPU per bare request (GET /ok) {bare:.2f} ms", flush=True)
            return cells


def floors(config: Path, env: dict[str, str], args: argparse.Namespace) -> dict[str, Row]:
    """Per graph, the CPU per run of LangGraph alone and with every step saved to Redis.

    From `bench/server_floor.py`, its Redis's CPU added, as many runs at once as a worker.
    """
    out: dict[str, Row] = {}
    for graph in args.graphs:
        row: Row = {}
        with redis_server() as redis:
            for floor in ("graph", "saver"):
                before = cpu_ms(redis.process.pid)
                done = subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "bench.server_floor",
                        str(config),
                        graph,
                        "--floor",
                        floor,
                        "--redis",
                        redis.url,
                        "--runs",
                        str(args.runs),
                        "--jobs",
                        "10",
                    ],
                    env=env,
                    cwd=ROOT,
                    check=True,
                    capture_output=True,
                    text=True,
                )
                got = json.loads(done.stdout.strip().splitlines()[-1])
                row[f"{floor} cpu"] = (
                    got["cpu ms"] + (cpu_ms(redis.process.pid) - before) / args.runs
                )
        out[graph] = row
        print(
            f"floor         {graph:10} graph alone {row['graph cpu']:6.1f} ms/run  "
            f"saved to Redis {row['saver cpu']:6.1f} ms/run (Redis included)",
            flush=True,
        )
    return out


def floor_ratios(cells: Cells, ref: Cells, floor: dict[str, Row]) -> None:
    """Each cell's CPU per run against the floor: the reference's, and graphwright's."""
    for key, row in cells.items():
        base = floor[key[0]]["saver cpu"]
        gw = row["cpu api"] + row["cpu worker"] + row["cpu redis"]
        print(
            f"floor ratio {key[0]:10} {key[1]:6} {key[2]:>3}  reference/floor "
            f"{ref[key]['cpu server'] / base:.2f}  graphwright/floor {gw / base:.2f}  "
            f"two bare requests/worker {100 * row['bare api'] / row['cpu worker']:.1f}%",
            flush=True,
        )
        # The measure: one worker (its Redis's CPU included) beyond the graph saved to
        # Redis, against the reference's whole server beyond the graph alone, in memory.
        worker = row["cpu worker"] + row["cpu redis"] - base
        reference_beyond = ref[key]["cpu server"] - floor[key[0]]["graph cpu"]
        print(
            f"beyond floor {key[0]:10} {key[1]:6} {key[2]:>3}  graphwright worker {worker:.1f} ms"
            f"  reference server {reference_beyond:.1f} ms  ratio {worker / reference_beyond:.2f}",
            flush=True,
        )


def bare_request_ms(url: str, pids: Callable[[], list[int]], requests: int = 600) -> float:
    """The API's CPU per request that does nothing (`GET /ok`), 32 in flight.

    What FastAPI and uvicorn cost before any route's own work.
    """

    async def hammer() -> None:
        async with httpx.AsyncClient(base_url=url) as client:
            gate = asyncio.Semaphore(32)

            async def one() -> None:
                async with gate:
                    (await client.get("/ok")).raise_for_status()

            await asyncio.gather(*(one() for _ in range(requests)))

    asyncio.run(hammer())  # warm
    before = sum(cpu_ms(p) for p in pids())
    asyncio.run(hammer())
    return (sum(cpu_ms(p) for p in pids()) - before) / requests


def summary(every: list[dict[tuple[str, str, int], Row]]) -> None:
    """Each cell's ratios, one column per run."""
    print("--- ratios (graphwright / langgraph dev), one value per run", flush=True)
    for key in every[0]:
        names = every[0][key]
        figures = "  ".join(
            f"{name} " + " ".join(f"{run[key][name]:.2f}" for run in every) for name in names
        )
        print(f"{key[0]:10} {key[1]:6} {key[2]:>3}  {figures}", flush=True)


def options() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=64, help="runs per cell at 32 in flight")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--graphs", default=",".join(server_project.GRAPHS))
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--inflight", default="1,8,32")
    parser.add_argument(
        "--jobs",
        type=int,
        default=WORKER_JOBS,
        help="graphwright's worker --jobs (default: the worker's own default; the reference: 10)",
    )
    args = parser.parse_args()
    args.graphs = args.graphs.split(",")
    args.kinds = args.kinds.split(",")
    args.inflight = [int(n) for n in args.inflight.split(",")]
    if unknown := set(args.graphs) - set(server_project.GRAPHS) or set(args.kinds) - set(KINDS):
        parser.error(f"unknown graph or kind: {', '.join(sorted(unknown))}")
    return args


def main() -> None:
    args = options()
    langgraph = subprocess.run(
        [str(ROOT / "scripts" / "reference-server")], check=True, capture_output=True, text=True
    ).stdout.strip()
    every = []
    with (
        tempfile.TemporaryDirectory(prefix="gw-bench-server-") as tmp,
        server_project.models() as model_env,
    ):
        config = server_project.write(Path(tmp))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LANGSMITH"))}
        env |= model_env | {
            "LANGGRAPH_CLI_NO_ANALYTICS": "1",
            "LANGSMITH_TRACING": "false",
            "GRAPHWRIGHT_RUN_RATE": "0",
            "GRAPHWRIGHT_CONFIG": str(config),
        }
        for attempt in range(args.repeat):
            print(f"--- run {attempt + 1}", flush=True)
            ref = reference(langgraph, config, env, args)
            gw = graphwright(config, env, args)
            run = {key: ratios(gw[key], ref[key]) for key in gw}
            for key, row in run.items():
                print(
                    f"ratio {key[0]:10} {key[1]:6} {key[2]:>3}  "
                    + "  ".join(f"{k} {v:.2f}" for k, v in row.items()),
                    flush=True,
                )
            floor_ratios(gw, ref, floors(config, env, args))
            every.append(run)
    if len(every) > 1:
        summary(every)


if __name__ == "__main__":
    main()
