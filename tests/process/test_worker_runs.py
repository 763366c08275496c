"""HTTP runs on workers stay correct under contention, kills and freezes: a queued run on a
busy thread waits (never an error), racing creates with `reject` make exactly one run, a
worker killed mid-tool while a client streams is finished by another and the client that
reconnects with `Last-Event-ID` gets every event exactly once, a frozen worker is not
robbed. (A worker killed inside a write or mid-model-call: tests/process/test_worker_crash.py.)"""

from __future__ import annotations

import json
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

from graphwright import Orchestrator
from graphwright.locking import thread_lock
from graphwright.offline import OfflineChatModel
from graphwright.server.records.event_log import stream_key
from graphwright.settings import Settings
from graphwright.testing.kit import until
from graphwright.testing.service import Service, running, service_for
from graphwright.testing.until import scaled
from tests.support.paths import ROOT

# Slow: worker processes frozen and killed mid-run
pytestmark = [pytest.mark.slow, pytest.mark.valkey]

PLUGIN = "tests.support.slow_graphs:register_all,tests.support.checkpoint_slow_graph:register"
GOAL = 'Schedule "Design review" on 2026-12-01 from 10:00 to 11:00.'
ORDER = "订单 A1001 到哪了？"


def events_of(svc: Service, tid: str, rid: str) -> list[tuple[str, str, str]]:
    entries = svc.orch.client.xrange(stream_key(svc.orch.keys, tid, rid))
    return [
        (i.decode(), f[b"event"].decode(), f[b"data"].decode())
        for i, f in entries
        if f[b"event"] != b"__end__"
    ]


@pytest.fixture
def local(settings: Settings) -> Iterator[Service]:
    with running(Orchestrator(settings=settings, model=OfflineChatModel())) as svc:
        yield svc


@pytest.fixture
def remote(redis_url: str, prefix: str) -> Iterator[Service]:
    """The API alone (every run, streams too, goes to the worker processes)."""
    with service_for(redis_url, prefix, PLUGIN, worker=False, queue_waits=True) as svc:
        yield svc


class Workers:
    def __init__(self, redis_url: str, prefix: str) -> None:
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
        self.env.update(
            REDIS_URL=redis_url,
            GRAPHWRIGHT_KEY_PREFIX=prefix,
            GRAPHWRIGHT_GRAPHS=PLUGIN,
            GRAPHWRIGHT_CLAIM_IDLE_MS="1000",
            PYTHONPATH=str(ROOT),
        )
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, name: str) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            [sys.executable, "-m", "graphwright", "worker", "--name", name],
            env=self.env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.procs.append(proc)
        return proc

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=scaled(20))


@pytest.fixture
def workers(redis_url: str, prefix: str) -> Iterator[Workers]:
    pool = Workers(redis_url, prefix)
    yield pool
    pool.stop()


def test_a_queued_run_on_a_busy_thread_waits_for_it_and_succeeds(local: Service) -> None:
    sdk = get_sync_client(url=local.url, api_key=None)
    tid = sdk.threads.create()["thread_id"]
    with thread_lock(local.orch.client, local.orch.keys, tid):  # another process runs the thread
        run = sdk.runs.create(tid, "agent", input={"goal": ORDER}, multitask_strategy="enqueue")
        delayed = local.orch.keys.queue() + ":delayed"
        until(lambda: local.orch.client.zcard(delayed) > 0, "the worker to put the run back")
        assert sdk.runs.get(tid, run["run_id"])["status"] == "pending"  # a retry, not an error
    assert "派送中" in sdk.runs.join(tid, run["run_id"])["answer"]
    assert sdk.runs.get(tid, run["run_id"])["status"] == "success"
    assert [e for _, e, _ in events_of(local, tid, run["run_id"])].count("metadata") == 1


def test_racing_creates_with_reject_make_exactly_one_run(local: Service) -> None:
    sdk = get_sync_client(url=local.url, api_key=None)
    tid = sdk.threads.create()["thread_id"]
    codes: list[int] = []
    start = threading.Barrier(8)

    def create() -> None:
        start.wait()
        response = httpx.post(
            f"{local.url}/threads/{tid}/runs",
            timeout=scaled(30),
            json={
                "assistant_id": "agent",
                "input": {"goal": ORDER},
                "multitask_strategy": "reject",
            },
        )
        codes.append(response.status_code)

    racers = [threading.Thread(target=create) for _ in range(8)]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join()
    assert sorted(codes) == [200] + [409] * 7
    (run,) = sdk.runs.list(tid)
    sdk.runs.join(tid, run["run_id"])
    assert sdk.runs.get(tid, run["run_id"])["status"] == "success"


def test_cancelling_a_pending_run_is_atomic_with_its_pickup(local: Service) -> None:
    sdk = get_sync_client(url=local.url, api_key=None)
    tid = sdk.threads.create()["thread_id"]
    run = sdk.runs.create(tid, "agent", input={"goal": ORDER}, after_seconds=0.3)
    sdk.runs.cancel(tid, run["run_id"])
    sdk.runs.join(tid, run["run_id"])
    assert sdk.runs.get(tid, run["run_id"])["status"] == "interrupted"
    assert events_of(local, tid, run["run_id"]) == []  # it never started
    until(lambda: local.orch.client.zcard(local.orch.keys.queue() + ":delayed") == 0, "the delay")
    assert not local.orch.meta(tid).get("graph")


def test_a_thread_created_but_never_run_can_be_deleted(local: Service) -> None:
    sdk = get_sync_client(url=local.url, api_key=None)
    tid = sdk.threads.create()["thread_id"]
    sdk.threads.delete(tid)
    with pytest.raises(httpx.HTTPStatusError) as caught:
        sdk.threads.get(tid)
    assert caught.value.response.status_code == 404


def test_a_worker_killed_mid_tool_mid_stream_is_finished_once_and_the_stream_resumes(
    remote: Service, workers: Workers, prefix: str, client: redis.Redis
) -> None:
    sdk = get_sync_client(url=remote.url, api_key=None)
    tid = sdk.threads.create()["thread_id"]
    first = workers.start("A")
    seen: list[tuple[str, str, str]] = []
    body = {
        "assistant_id": "slow_agent",
        "input": {"goal": GOAL},
        "stream_mode": ["updates"],
        "stream_resumable": True,
    }
    with httpx.stream(
        "POST", f"{remote.url}/threads/{tid}/runs/stream", json=body, timeout=scaled(60)
    ) as response:
        event_id = event = None
        for line in response.iter_lines():
            if line.startswith("id:"):
                event_id = line[3:].strip()
            elif line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:") and event_id and event:
                seen.append((event_id, event, line[5:].strip()))
                if event == "updates":
                    break  # the connection drops here
        run_id = response.headers["content-location"].rsplit("/", 1)[-1]
    until(lambda: client.get(f"{prefix}:slow:started") == b"1", "the slow tool to start")
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=scaled(10))
    workers.start("B")
    rest = list(sdk.runs.join_stream(tid, run_id, last_event_id=seen[-1][0]))
    got = [e for _, e, _ in seen] + [p.event for p in rest]
    logged = events_of(remote, tid, run_id)
    assert got == [e for _, e, _ in logged]  # every event, none twice
    assert [json.loads(d) for _, e, d in seen if e == "updates"] + [
        p.data for p in rest if p.event == "updates"
    ] == [json.loads(d) for _, e, d in logged if e == "updates"]
    assert sdk.runs.get(tid, run_id)["status"] == "success"
    assert client.hlen(remote.orch.keys.calendar()) == 1  # the event, created once
    assert [json.loads(d)["attempt"] for _, e, d in logged if e == "metadata"] == [1, 2]
    assert "Created 'Design review'" in sdk.runs.join(tid, run_id)["answer"]


def test_a_frozen_worker_is_not_robbed_and_its_run_ends_once(
    remote: Service, workers: Workers, prefix: str, client: redis.Redis
) -> None:
    sdk = get_sync_client(url=remote.url, api_key=None)
    tid = sdk.threads.create()["thread_id"]
    run = sdk.runs.create(tid, "slow_agent", input={"goal": GOAL})
    # A's lock must outlive B's start on a busy machine: past it, B may take the run over.
    workers.env["GRAPHWRIGHT_LOCK_TTL_S"] = str(scaled(30))
    first = workers.start("A")
    until(lambda: client.get(f"{prefix}:slow:started") == b"1", "the slow tool to start")
    first.send_signal(signal.SIGSTOP)  # frozen past the claim idle time (1 s)
    workers.start("B")
    delayed = remote.orch.keys.queue() + ":delayed"
    until(lambda: client.zcard(delayed) > 0, "B to claim the entry and find the thread busy")
    first.send_signal(signal.SIGCONT)
    values = sdk.runs.join(tid, run["run_id"])
    assert "Created 'Design review'" in values["answer"]
    assert sdk.runs.get(tid, run["run_id"])["status"] == "success"
    assert client.hlen(remote.orch.keys.calendar()) == 1  # the event, created once
    assert client.get(f"{prefix}:slow:started") == b"1"  # nobody ran the tool again
    starts = [e for _, e, _ in events_of(remote, tid, run["run_id"])].count("metadata")
    assert starts == 1


def test_a_worker_killed_mid_checkpoint_is_finished_by_another_once(
    remote: Service, workers: Workers, prefix: str, client: redis.Redis
) -> None:
    sdk = get_sync_client(url=remote.url, api_key=None)
    tid = sdk.threads.create()["thread_id"]
    run = sdk.runs.create(tid, "slow_checkpoint", input={"steps": []})
    first = workers.start("A")
    until(lambda: client.get(f"{prefix}:ckpt:slow") == b"1", "the slow checkpoint write to start")
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=scaled(10))
    workers.start("B")
    joined = sdk.runs.join(tid, run["run_id"])
    assert sdk.runs.get(tid, run["run_id"])["status"] == "success"
    assert joined["steps"] == ["first", "last"]
    assert client.get(f"{prefix}:ckpt:runs:first") == b"1"  # its writes were kept, not redone
    starts = [
        json.loads(d)["attempt"]
        for _, e, d in events_of(remote, tid, run["run_id"])
        if e == "metadata"
    ]
    assert starts == [1, 2]
