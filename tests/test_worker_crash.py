"""A worker killed with SIGKILL mid-run: a second worker claims the run and finishes it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from langgraph_sdk import get_sync_client

from graphwright import Orchestrator
from graphwright.settings import Settings
from tests.http_service import Service, running

ROOT = Path(__file__).resolve().parent.parent
GOAL = 'Schedule "Design review" on 2026-12-01 from 10:00 to 11:00.'
PLUGIN = "tests.slow_graphs:register_all"


@pytest.fixture
def service(redis_url: str, prefix: str) -> Iterator[Service]:
    settings = Settings(_env_file=None, REDIS_URL=redis_url, GRAPHWRIGHT_KEY_PREFIX=prefix,  # type: ignore[call-arg]
                        GRAPHWRIGHT_GRAPHS=PLUGIN)
    with running(Orchestrator(settings=settings), worker=False) as svc:
        yield svc


def start_worker(name: str, redis_url: str, prefix: str) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(REDIS_URL=redis_url, GRAPHWRIGHT_KEY_PREFIX=prefix, GRAPHWRIGHT_GRAPHS=PLUGIN,
               GRAPHWRIGHT_CLAIM_IDLE_MS="1000", PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-m", "graphwright", "worker", "--name", name],
                            env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def test_second_worker_finishes_a_run_whose_worker_was_killed(
    service: Service, redis_url: str, prefix: str, client: redis.Redis
) -> None:
    sdk = get_sync_client(url=service.url, api_key=None)
    tid = sdk.threads.create()["thread_id"]
    run = sdk.runs.create(tid, "slow_answer", input={"goal": GOAL})
    effects = service.orch.keys.effects()
    first = start_worker("A", redis_url, prefix)
    second = None
    try:
        deadline = time.monotonic() + 60
        while client.get(f"{prefix}:slow:answering") != b"1":  # the event is booked, the answer is slow
            assert time.monotonic() < deadline and first.poll() is None, first.stderr
            time.sleep(0.05)
        assert client.hget(effects, "create_event") == b"1"
        assert sdk.runs.get(tid, run["run_id"])["status"] == "running"
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
        second = start_worker("B", redis_url, prefix)
        values = sdk.runs.join(tid, run["run_id"])
        assert "Created 'Design review'" in values["answer"]
        assert sdk.runs.get(tid, run["run_id"])["status"] == "success"
        assert client.hget(effects, "create_event") == b"1"  # the side effect happened once
        assert client.get(f"{prefix}:slow:answering") == b"2"  # only the unfinished step ran again
        consumers = {c["name"]: c["pending"] for c in client.xinfo_consumers(service.orch.keys.queue(), "workers")}
        assert consumers.get(b"A", consumers.get("A")) == 0
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=15)
