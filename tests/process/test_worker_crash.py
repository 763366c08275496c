"""A worker killed with SIGKILL inside a write: a second worker claims the run, which stops at
the gate with the write's outcome unknown instead of running it again or calling it failed."""

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

from graphwright.nodes.gate_models import decide_all
from graphwright.testing.service import Service, service_for
from graphwright.testing.until import scaled
from tests.support.paths import ROOT

# Slow: worker processes killed inside a write and a model call
pytestmark = [pytest.mark.slow, pytest.mark.valkey]

GOAL = 'Schedule "Design review" on 2026-12-01 from 10:00 to 11:00.'
PLUGIN = "tests.support.slow_graphs:register_all"


@pytest.fixture
def service(redis_url: str, prefix: str) -> Iterator[Service]:
    with service_for(redis_url, prefix, PLUGIN, worker=False) as svc:
        yield svc


def start_worker(name: str, redis_url: str, prefix: str, **extra: str) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(
        REDIS_URL=redis_url,
        GRAPHWRIGHT_KEY_PREFIX=prefix,
        GRAPHWRIGHT_GRAPHS=PLUGIN,
        GRAPHWRIGHT_CLAIM_IDLE_MS="1000",
        PYTHONPATH=str(ROOT),
        **extra,
    )
    return subprocess.Popen(
        [sys.executable, "-m", "graphwright", "worker", "--name", name],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def test_a_worker_killed_inside_a_write_is_claimed_and_left_to_a_reviewer(
    service: Service, redis_url: str, prefix: str, client: redis.Redis, tmp_path: Path
) -> None:
    effects = tmp_path / "effects"
    sdk = get_sync_client(url=service.url, api_key=None)
    tid = sdk.threads.create()["thread_id"]
    client.set(f"{prefix}:slow:hold", 1)  # the write waits after its effect until released
    run = sdk.runs.create(tid, "slow_write", input={"goal": GOAL})
    first = start_worker("A", redis_url, prefix, SLOW_GRAPHS_EFFECTS=str(effects))
    second = None
    try:
        deadline = time.monotonic() + scaled(60)
        while client.get(f"{prefix}:slow:write_effected") != b"1":
            assert time.monotonic() < deadline and first.poll() is None, first.stderr
            time.sleep(0.05)
        first.send_signal(signal.SIGKILL)  # after the effect, before its record
        first.wait(timeout=scaled(10))
        client.delete(f"{prefix}:slow:hold")
        second = start_worker("B", redis_url, prefix, SLOW_GRAPHS_EFFECTS=str(effects))
        sdk.runs.join(tid, run["run_id"])
        # As on the Agent Server: a run that stops at a gate succeeded; its thread waits.
        assert sdk.runs.get(tid, run["run_id"])["status"] == "success"
        assert sdk.threads.get(tid)["status"] == "interrupted"
        pending = service.orch.state(tid).pending
        assert pending is not None and pending.calls[0].kind == "outcome_unknown"
        assert int(client.get(f"{prefix}:slow:write_started") or 0) == 1  # never re-run by itself
        consumers = {
            c["name"]: c["pending"]
            for c in client.xinfo_consumers(service.orch.keys.queue(), "workers")
        }
        assert consumers.get(b"A", consumers.get("A")) == 0  # B claimed A's entry
        assert len(effects.read_text().splitlines()) == 1
        done = service.orch.resume(
            tid, decide_all(pending, "mark_done", result="booked, seen by hand")
        )
        assert done.status == "completed" and len(effects.read_text().splitlines()) == 1
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=scaled(15))


def test_a_worker_killed_mid_model_call_is_finished_by_another_with_its_write_once(
    service: Service, redis_url: str, prefix: str, client: redis.Redis
) -> None:
    sdk = get_sync_client(url=service.url, api_key=None)
    tid = sdk.threads.create()["thread_id"]
    run = sdk.runs.create(tid, "slow_answer", input={"goal": GOAL})
    first = start_worker("A", redis_url, prefix)
    second = None
    try:
        deadline = time.monotonic() + scaled(60)
        while client.get(f"{prefix}:slow:answering") != b"1":  # create_event done, answer under way
            assert time.monotonic() < deadline and first.poll() is None, first.stderr
            time.sleep(0.05)
        assert client.hlen(service.orch.keys.calendar()) == 1
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=scaled(10))
        second = start_worker("B", redis_url, prefix)
        values = sdk.runs.join(tid, run["run_id"])
        assert sdk.runs.get(tid, run["run_id"])["status"] == "success"
        assert "Created 'Design review'" in values["answer"]
        assert client.get(f"{prefix}:slow:answering") == b"2"  # the model call was made again
        assert client.hlen(service.orch.keys.calendar()) == 1  # the write was not
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=scaled(15))
