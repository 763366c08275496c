"""No run without an owner, and a queue that stays small: a run for later sits in the
delayed queue, not in a sleeping API process; a run recorded with no owner is swept onto
the queue by a worker; a busy thread's waiting runs retry with backoff and the queue is
trimmed behind them; a run id is created once."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator

import httpx
import pytest
import redis
from langgraph_sdk import get_sync_client

from graphwright.checkpoints.keys import Keys
from graphwright.server.records.run_store import RunExistsError, RunStore
from graphwright.server.schemas.run_bodies import RunCreate
from graphwright.testing.kit import until
from graphwright.testing.redis_servers import free_port
from graphwright.testing.service import Service, service_for
from tests.support.paths import ROOT

# Slow: API processes killed around runs they created, workers sweeping them
pytestmark = pytest.mark.slow

PLUGIN = "tests.support.slow_graphs:register_all"
GOAL = 'Schedule "Design review" on 2026-12-01 from 10:00 to 11:00.'


def environment(redis_url: str, prefix: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(
        REDIS_URL=redis_url,
        GRAPHWRIGHT_KEY_PREFIX=prefix,
        GRAPHWRIGHT_GRAPHS=PLUGIN,
        GRAPHWRIGHT_CLAIM_IDLE_MS="1000",
        PYTHONPATH=str(ROOT),
    )
    return env


def spawn(env: dict[str, str], *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "graphwright", *args],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/ok", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def ask(url: str, body: dict[str, object]) -> None:
    with contextlib.suppress(httpx.HTTPError):  # the API process was killed under it
        httpx.post(url, json=body, timeout=60)


@pytest.mark.parametrize("verb", ["wait", "stream"])
def test_an_api_killed_during_after_seconds_leaves_the_run_to_a_worker_once(
    verb: str, redis_url: str, prefix: str, client: redis.Redis
) -> None:
    env = environment(redis_url, prefix)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    api = spawn(env, "serve", "--port", str(port))
    worker = None
    try:
        until(lambda: answers(url), "the API to listen")
        tid = httpx.post(f"{url}/threads", json={}).json()["thread_id"]
        body = {"assistant_id": "slow_agent", "input": {"goal": GOAL}, "after_seconds": 2}
        threading.Thread(
            target=ask, args=(f"{url}/threads/{tid}/runs/{verb}", body), daemon=True
        ).start()
        store = RunStore(client, Keys(prefix=prefix))
        until(lambda: bool(store.active(tid)), "the run to be recorded")
        api.send_signal(signal.SIGKILL)  # inside the delay: nothing of the run is in this process
        api.wait(timeout=10)
        (run_id,) = store.active(tid)
        worker = spawn(env, "worker", "--name", "W")
        until(
            lambda: store.get(tid, run_id).status not in ("pending", "running"),
            "a worker to finish the run",
            30,
        )
        assert store.get(tid, run_id).status == "success"
        assert client.hlen(Keys(prefix=prefix).calendar()) == 1
    finally:
        for proc in (api, worker):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                proc.wait(timeout=15)


@pytest.fixture
def service(redis_url: str, prefix: str) -> Iterator[Service]:
    with service_for(redis_url, prefix, PLUGIN, worker=False) as svc:
        yield svc


def test_a_run_recorded_without_an_owner_is_swept_onto_the_queue_and_finished_once(
    service: Service, redis_url: str, prefix: str, client: redis.Redis
) -> None:
    sdk = get_sync_client(url=service.url, api_key=None)
    tid = sdk.threads.create()["thread_id"]
    store = RunStore(client, service.orch.keys)
    # what a crash between a cluster's CREATE and its XADD used to leave: a record, no owner
    run = store.create(tid, RunCreate(assistant_id="slow_agent", input={"goal": GOAL}), queue=False)
    worker = spawn(environment(redis_url, prefix), "worker", "--name", "W")
    try:
        until(
            lambda: store.get(tid, run.run_id).status not in ("pending", "running"),
            "the sweeper to hand the run to a worker",
            30,
        )
        assert store.get(tid, run.run_id).status == "success"
        assert client.hlen(service.orch.keys.calendar()) == 1
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=15)


def test_a_run_id_is_created_once(service: Service, client: redis.Redis) -> None:
    tid = service.orch.create_thread()
    store = RunStore(client, service.orch.keys)
    body = RunCreate(assistant_id="agent", input={"goal": GOAL}, multitask_strategy="enqueue")
    store.create(tid, body, queue=True, run_id="slot-1")
    with pytest.raises(RunExistsError):
        store.create(tid, body, queue=True, run_id="slot-1")
    assert client.xlen(service.orch.keys.queue()) == 1  # queued once, never reset


def test_the_queue_stays_bounded_behind_a_busy_run_with_ten_waiting(
    redis_url: str, prefix: str, client: redis.Redis
) -> None:
    client.set(f"{prefix}:slow:hold_answer", 1)  # the first run stays busy while this exists
    with service_for(redis_url, prefix, PLUGIN, worker=True) as svc:
        sdk = get_sync_client(url=svc.url, api_key=None)
        tid = sdk.threads.create()["thread_id"]
        first = sdk.runs.create(tid, "held_answer", input={"goal": GOAL})
        until(lambda: client.get(f"{prefix}:slow:answering") == b"1", "the first run to be busy")
        for _ in range(10):
            sdk.runs.create(tid, "agent", input={"goal": "hello"}, multitask_strategy="enqueue")
        queue = svc.orch.keys.queue()
        lengths: list[int] = []

        def retried_enough() -> bool:  # the waiting runs went round the queue several times
            lengths.append(client.xlen(queue))
            return int(client.xinfo_stream(queue)["entries-added"]) >= 40

        until(retried_enough, "the waiting runs to retry", 90)
        assert max(lengths) <= 12, lengths  # the waiting ten and the busy one, trimmed behind
        client.delete(f"{prefix}:slow:hold_answer")
        sdk.runs.join(tid, first["run_id"])
        until(
            lambda: not svc.orch.client.zcard(f"{svc.orch.keys.thread_tag(tid)}:inflight"),
            "the waiting runs to run",
            120,
        )
