"""A worker runs many runs at once (`--jobs`): SIGKILLed with ten in flight, each run is
finished once by another worker; SIGTERMed, it hands back what cannot finish within
`--grace` and loses nothing. Effects are counted in the calendar the tool books into."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
import redis
from langgraph_sdk import get_sync_client

from graphwright.testing.kit import until
from graphwright.testing.service import Service, service_for
from tests.support.paths import ROOT

# Slow: a worker with ten runs SIGKILLed, another SIGTERMed in its grace period
pytestmark = pytest.mark.slow

PLUGIN = "tests.support.slow_graphs:register_all"
RUNS = 10


def goal(i: int) -> str:  # one slot each: the calendar refuses overlapping events
    return f'Schedule "Review {i}" on 2026-12-{i + 1:02d} from 10:00 to 11:00.'


@pytest.fixture
def service(redis_url: str, prefix: str) -> Iterator[Service]:
    with service_for(redis_url, prefix, PLUGIN, worker=False) as svc:
        yield svc


def start_worker(name: str, redis_url: str, prefix: str, *args: str) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(
        REDIS_URL=redis_url,
        GRAPHWRIGHT_KEY_PREFIX=prefix,
        GRAPHWRIGHT_GRAPHS=PLUGIN,
        GRAPHWRIGHT_CLAIM_IDLE_MS="1000",
        PYTHONPATH=str(ROOT),
    )
    return subprocess.Popen(
        [sys.executable, "-m", "graphwright", "worker", "--name", name, "--jobs", str(RUNS), *args],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def held_runs(service: Service, client: redis.Redis, prefix: str) -> list[tuple[str, str]]:
    """Ten runs whose final answers wait while `slow:hold_answer` exists."""
    client.set(f"{prefix}:slow:hold_answer", 1)
    sdk = get_sync_client(url=service.url, api_key=None)
    runs = []
    for i in range(RUNS):
        tid = sdk.threads.create()["thread_id"]
        runs.append((tid, sdk.runs.create(tid, "held_answer", input={"goal": goal(i)})["run_id"]))
    return runs


def answering(client: redis.Redis, prefix: str) -> int:
    return int(client.get(f"{prefix}:slow:answering") or 0)


def stop(*procs: subprocess.Popen[bytes] | None) -> None:
    for proc in procs:
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=15)


def test_a_worker_killed_with_ten_runs_in_flight_has_each_finished_once_by_another(
    service: Service, redis_url: str, prefix: str, client: redis.Redis
) -> None:
    runs = held_runs(service, client, prefix)
    first = start_worker("A", redis_url, prefix)
    second = None
    try:
        # all ten at once in one worker: each booked its event and waits in its answer
        until(lambda: answering(client, prefix) == RUNS, "ten runs in flight on one worker", 60)
        assert client.hlen(service.orch.keys.calendar()) == RUNS
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
        client.delete(f"{prefix}:slow:hold_answer")
        second = start_worker("B", redis_url, prefix)
        sdk = get_sync_client(url=service.url, api_key=None)
        for tid, run_id in runs:
            values = sdk.runs.join(tid, run_id)
            assert sdk.runs.get(tid, run_id)["status"] == "success"
            assert "Created 'Review" in values["answer"]
        assert client.hlen(service.orch.keys.calendar()) == RUNS  # one effect each, none again
        assert answering(client, prefix) == 2 * RUNS  # each killed answer was made again once
    finally:
        stop(first, second)


def test_a_stopped_worker_hands_back_its_runs_within_the_grace_period_and_loses_none(
    service: Service, redis_url: str, prefix: str, client: redis.Redis
) -> None:
    runs = held_runs(service, client, prefix)
    grace_s = 3.0
    first = start_worker("A", redis_url, prefix, "--grace", str(grace_s))
    second = None
    try:
        until(lambda: answering(client, prefix) == RUNS, "ten runs in flight on one worker", 60)
        began = time.monotonic()
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=grace_s + 10)
        took = time.monotonic() - began
        assert took < grace_s + 3, f"the worker took {took:.1f} s to stop"
        sdk = get_sync_client(url=service.url, api_key=None)
        assert all(sdk.runs.get(t, r)["status"] in ("pending", "running") for t, r in runs)
        client.delete(f"{prefix}:slow:hold_answer")
        second = start_worker("B", redis_url, prefix)
        for tid, run_id in runs:
            sdk.runs.join(tid, run_id)
            assert sdk.runs.get(tid, run_id)["status"] == "success"
        assert client.hlen(service.orch.keys.calendar()) == RUNS
    finally:
        stop(first, second)


def test_a_stopped_worker_finishes_the_runs_that_end_within_the_grace_period(
    service: Service, redis_url: str, prefix: str, client: redis.Redis
) -> None:
    runs = held_runs(service, client, prefix)
    first = start_worker("A", redis_url, prefix, "--grace", "20")
    try:
        until(lambda: answering(client, prefix) == RUNS, "ten runs in flight on one worker", 60)
        first.send_signal(signal.SIGTERM)
        client.delete(f"{prefix}:slow:hold_answer")  # they can end now, before the grace is over
        first.wait(timeout=30)
        sdk = get_sync_client(url=service.url, api_key=None)
        assert all(sdk.runs.get(t, r)["status"] == "success" for t, r in runs)
        assert answering(client, prefix) == RUNS  # nothing handed back, nothing made twice
    finally:
        stop(first)
