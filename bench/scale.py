"""Runs per second through the HTTP API as workers are added, on one Redis and on a cluster.

    python -m bench.scale [--runs 120] [--workers 1,2,4] [--latency 0,200]
        [--topology single,cluster]

Each configuration starts its own servers (a redis-server, or 3 cluster masters), one
`graphwright serve --queue`, N `graphwright worker` processes and an OpenAI-compatible
model server that answers every plan step after a fixed latency (a tool call, then the
answer: two model calls and one tool call per run, as a small real task). It prints
runs/s, the Redis server's CPU per run (`INFO commandstats`), the workers' CPU per run
(`/proc`), and projects how many workers one Redis core and a cluster of N masters carry.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
import redis
import uvicorn
from fastapi import FastAPI, Request
from langgraph_sdk import get_client

from graphwright.testing.redis_servers import Server, start_cluster, start_server

GOAL = "订单 A1001 到哪了？"
TICK = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def model_app(latency_s: float) -> FastAPI:
    """Chat completions: a get_order call first, the answer once a tool result is present."""
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def complete(request: Request) -> dict[str, Any]:
        body = await request.json()
        await asyncio.sleep(latency_s)
        answered = any(m.get("role") == "tool" for m in body["messages"])
        message: dict[str, Any] = (
            {"role": "assistant", "content": "订单 A1001 已发货，派送中。"}
            if answered
            else {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{uuid.uuid4().hex[:12]}",
                        "type": "function",
                        "function": {
                            "name": "get_order",
                            "arguments": json.dumps({"order_id": "A1001"}),
                        },
                    }
                ],
            }
        )
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:8]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "bench"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "stop" if answered else "tool_calls",
                }
            ],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
        }

    return app


@contextmanager
def model_server(latency_s: float) -> Iterator[str]:
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(model_app(latency_s), host="127.0.0.1", port=port, log_level="error")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextmanager
def redis_topology(kind: str, workdir: Path) -> Iterator[list[Server]]:
    # Both persist as the README recommends (AOF, fsync every second), as cluster nodes do.
    servers = (
        start_cluster(workdir, masters=3)
        if kind == "cluster"
        else [start_server(workdir, "--appendonly", "yes")]
    )
    try:
        yield servers
    finally:
        for s in servers:
            s.stop()


def redis_stats(servers: list[Server]) -> tuple[dict[str, int], float]:
    """Microseconds spent in each command so far, and the servers' CPU seconds (getrusage)."""
    usec: dict[str, int] = {}
    cpu = 0.0
    for s in servers:
        c = redis.Redis(port=s.port)
        stats: dict[str, Any] = c.info("commandstats")  # type: ignore[assignment]
        for name, v in stats.items():
            usec[name] = usec.get(name, 0) + int(v["usec"])
        info: dict[str, Any] = c.info("cpu")  # type: ignore[assignment]
        cpu += float(info["used_cpu_user"]) + float(info["used_cpu_sys"])
        c.close()
    return usec, cpu


def costliest(before: dict[str, int], after: dict[str, int], runs: int) -> str:
    """The commands that took most server time, in µs per run."""
    spent = {k.removeprefix("cmdstat_"): (v - before.get(k, 0)) / runs for k, v in after.items()}
    top = sorted(spent.items(), key=lambda kv: -kv[1])[:4]
    return ", ".join(f"{name} {us:.0f}" for name, us in top)


def cpu_seconds(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / TICK


@dataclass(frozen=True)
class Row:
    topology: str
    workers: int
    latency_ms: int
    runs_per_s: float
    redis_us_per_run: float  # time inside commands (INFO commandstats)
    redis_cpu_ms_per_run: float  # the servers' whole CPU (INFO cpu): commands, I/O, replies
    worker_ms_per_run: float
    api_ms_per_run: float
    costliest: str  # the commands that took most server time, µs per run


def wait_ok(url: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/ok").status_code == 200:
                return
        except httpx.TransportError:
            pass  # not listening yet
        time.sleep(0.1)
    raise RuntimeError("the API did not start")


async def drive(url: str, runs: int, concurrency: int) -> float:
    client = get_client(url=url, api_key=None)
    gate = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with gate:
            tid = (await client.threads.create())["thread_id"]
            values = await client.runs.wait(tid, "agent", input={"goal": GOAL})
            if "派送中" not in json.dumps(values, ensure_ascii=False):
                raise RuntimeError(f"run on {tid} did not complete: {values}")

    started = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(runs)))
    return time.perf_counter() - started


def measure(topology: str, workers: int, latency_ms: int, runs: int) -> Row:
    with (
        tempfile.TemporaryDirectory() as tmp,
        redis_topology(topology, Path(tmp)) as servers,
        model_server(latency_ms / 1000) as model_url,
    ):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "GRAPHWRIGHT_"))}
        env.update(
            REDIS_URL=servers[0].url,
            GRAPHWRIGHT_KEY_PREFIX="bscale",
            GRAPHWRIGHT_REDIS_CLUSTER="true" if topology == "cluster" else "false",
            OPENAI_BASE_URL=model_url,
            OPENAI_API_KEY="bench",
            GRAPHWRIGHT_DEADLINE_S="600",
        )
        if "GRAPHWRIGHT_TOKENIZER" in os.environ:  # e.g. "approximate" on a machine without network
            env["GRAPHWRIGHT_TOKENIZER"] = os.environ["GRAPHWRIGHT_TOKENIZER"]
        port = free_port()
        cli = [sys.executable, "-m", "graphwright"]
        api = subprocess.Popen(
            [*cli, "serve", "--queue", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        pool = [
            subprocess.Popen(
                [*cli, "worker", "--name", f"w{i}"],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for i in range(workers)
        ]
        try:
            url = f"http://127.0.0.1:{port}"
            wait_ok(url)
            asyncio.run(drive(url, workers, workers))  # warm every worker up
            (cmds0, rcpu0), cpu0 = redis_stats(servers), cpu_seconds([p.pid for p in pool])
            acpu0 = cpu_seconds([api.pid])
            wall = asyncio.run(drive(url, runs, concurrency=workers * 4))
            (cmds, rcpu), cpu = redis_stats(servers), cpu_seconds([p.pid for p in pool]) - cpu0
            rcpu, acpu = rcpu - rcpu0, cpu_seconds([api.pid]) - acpu0
            usec = sum(cmds.values()) - sum(cmds0.values())
            top = costliest(cmds0, cmds, runs)
        finally:
            for proc in (api, *pool):
                proc.terminate()
            for proc in (api, *pool):
                proc.wait(timeout=15)
    return Row(
        topology,
        workers,
        latency_ms,
        runs / wall,
        usec / runs,
        rcpu * 1000 / runs,
        cpu * 1000 / runs,
        acpu * 1000 / runs,
        top,
    )


def report(rows: list[Row]) -> None:
    """The measured table, then what one Redis core, a worker and an API core would carry."""
    print(
        "\nmeasured (this machine: 2 cores shared by the API, the workers, Redis and the model"
        " server)"
    )
    print(
        f"{'topology':<9}{'latency':>8}{'workers':>8}{'runs/s':>9}{'x 1 worker':>11}"
        f"{'Redis µs/run':>13}{'Redis CPU ms':>13}{'worker ms':>10}{'API ms':>8}"
    )
    for r in rows:
        base = next(
            b
            for b in rows
            if (b.topology, b.latency_ms, b.workers)
            == (r.topology, r.latency_ms, min(x.workers for x in rows))
        )
        print(
            f"{r.topology:<9}{r.latency_ms:>8}{r.workers:>8}{r.runs_per_s:>9.1f}"
            f"{r.runs_per_s / base.runs_per_s:>11.2f}{r.redis_us_per_run:>13.0f}"
            f"{r.redis_cpu_ms_per_run:>13.2f}{r.worker_ms_per_run:>10.1f}{r.api_ms_per_run:>8.1f}"
        )
    print(
        "\nprojected from the per-run costs of the most workers measured (a core each; Redis by"
        " its process CPU, by commandstats alone in brackets)"
    )
    print(
        f"{'topology':<9}{'latency':>8}{'runs/s per Redis core':>23}{'runs/s per worker':>19}"
        f"{'workers per Redis core':>24}{'runs/s per API core':>21}"
    )
    for r in (x for x in rows if x.workers == max(y.workers for y in rows)):
        per_core = 1000 / r.redis_cpu_ms_per_run
        ceiling = 1e6 / r.redis_us_per_run
        per_worker = 1 / (r.worker_ms_per_run / 1000 + 2 * r.latency_ms / 1000)
        print(
            f"{r.topology:<9}{r.latency_ms:>8}{per_core:>13,.0f} [{ceiling:>7,.0f}]"
            f"{per_worker:>19.1f}{per_core / per_worker:>24,.0f}{1000 / r.api_ms_per_run:>21,.0f}"
        )
    print(
        "a cluster of N masters carries ~N x the per-core figure (threads spread over the slots;"
        " the queue stream and the global indexes stay on one slot each)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=120)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--latency", default="0,200", help="model latency per call, ms")
    parser.add_argument("--topology", default="single,cluster")
    args = parser.parse_args()
    rows: list[Row] = []
    for topology in args.topology.split(","):
        for latency in (int(x) for x in args.latency.split(",")):
            for workers in (int(x) for x in args.workers.split(",")):
                rows.append(measure(topology, workers, latency, args.runs))
                r = rows[-1]
                print(
                    f"{r.topology:<8} workers {r.workers}  latency {r.latency_ms:>3} ms  "
                    f"{r.runs_per_s:6.1f} runs/s  Redis {r.redis_us_per_run:6.0f} µs/run "
                    f"({r.redis_cpu_ms_per_run:.2f} ms CPU)  workers {r.worker_ms_per_run:6.1f} ms "
                    f"CPU/run  API {r.api_ms_per_run:5.1f} ms CPU/run  [{r.costliest}]",
                    flush=True,
                )
    report(rows)


if __name__ == "__main__":
    main()
