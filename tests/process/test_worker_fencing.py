"""A worker frozen (SIGSTOP) past its thread lock's expiry: a second worker takes the run
over and finishes it; thawed, the first finds every write refused by the fencing token and
stops, so the thread holds one run's history and one effect, and its meta, the run's record
and event stream, the trace and the user's memories are as the second worker left them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from langgraph_sdk import get_sync_client

from graphwright import Orchestrator
from graphwright.server.records.event_log import stream_key
from graphwright.server.records.run_store import RunStore
from graphwright.testing.kit import until
from graphwright.testing.scripted_openai import Reply, ScriptedOpenAI
from graphwright.testing.service import Service, service_for
from graphwright.testing.until import scaled
from tests.support.paths import ROOT

# Slow: a worker process frozen past its lock, another taking over
pytestmark = pytest.mark.slow

PLUGIN = "tests.support.slow_graphs:register_all"
STOPPED = (
    b"taken over by another executor; this one stops"  # the executor's last line, after its writes
)
GOAL = 'My name is Ada. Schedule "Design review" on 2026-12-01 from 10:00 to 11:00.'


@pytest.fixture
def remote(redis_url: str, prefix: str) -> Iterator[Service]:
    with service_for(redis_url, prefix, PLUGIN, worker=False) as svc:
        yield svc


def test_a_worker_frozen_past_its_lock_is_fenced_out_after_a_takeover(
    remote: Service, redis_url: str, prefix: str, client: redis.Redis, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(
        REDIS_URL=redis_url,
        GRAPHWRIGHT_KEY_PREFIX=prefix,
        GRAPHWRIGHT_GRAPHS=PLUGIN,
        GRAPHWRIGHT_CLAIM_IDLE_MS="1000",
        GRAPHWRIGHT_LOCK_TTL_S="1.5",
        PYTHONPATH=str(ROOT),
    )
    logs = {name: tmp_path / f"{name}.log" for name in ("A", "B")}
    procs: list[subprocess.Popen[bytes]] = []

    def worker(name: str) -> subprocess.Popen[bytes]:
        with logs[name].open("wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "graphwright", "worker", "--name", name],
                env=env,
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        procs.append(proc)
        return proc

    sdk = get_sync_client(url=remote.url, api_key=None)
    tid = sdk.threads.create()["thread_id"]
    run = sdk.runs.create(tid, "slow_agent", input={"goal": GOAL}, metadata={"user_id": "ada"})
    try:
        first = worker("A")
        until(lambda: client.get(f"{prefix}:slow:started") == b"1", "the slow tool to start")
        first.send_signal(signal.SIGSTOP)  # frozen inside the tool, past the lock's 1.5 s
        until(lambda: not client.exists(remote.orch.keys.lock(tid)), "A's lock to expire")
        worker("B")
        until(
            lambda: sdk.runs.get(tid, run["run_id"])["status"] == "success", "B to finish the run"
        )
        fence = int(client.get(remote.orch.keys.fence(tid)) or 0)
        assert fence == 2  # B's acquisition came after A's
        before = _everything(remote.orch, tid, run["run_id"])
        assert before["memories"]  # B's run remembered the name: A must not store it again
        first.send_signal(signal.SIGCONT)
        until(
            lambda: STOPPED in logs["A"].read_bytes(),
            "A to find that it lost the run",
            timeout_s=30,
        )
        assert _everything(remote.orch, tid, run["run_id"]) == before
        assert client.hlen(remote.orch.keys.calendar()) == 1  # the event, created once
        state = remote.orch.state(tid)
        results = [_tool_call_id(m) for m in state.values["messages"] if _tool_call_id(m)]
        assert len(results) == len(set(results)) == 2  # one result per call: a single run's history
        assert (
            state.status == "completed" and sdk.runs.get(tid, run["run_id"])["status"] == "success"
        )
        assert int(client.get(remote.orch.keys.fence(tid)) or 0) == fence  # A took nothing back
        saved = list(
            remote.orch.saver.list({"configurable": {"thread_id": tid, "checkpoint_ns": ""}})
        )
        parents = [
            t.parent_config["configurable"]["checkpoint_id"] for t in saved if t.parent_config
        ]
        assert (
            len(parents) == len(set(parents)) == len(saved) - 1
        )  # one chain: no step of A's forked it
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=scaled(15))


def test_a_worker_frozen_while_it_remembers_stores_nothing_after_a_takeover(
    remote: Service, redis_url: str, prefix: str, client: redis.Redis, tmp_path: Path
) -> None:
    """Frozen in its last step, the remember call after the run's end: the successor ends
    the run, and the thawed worker's extraction stores no memory, writes no meta, record or
    event (the one window where only those writes' fences stand between it and the thread)."""
    asked, answer = threading.Event(), threading.Event()

    def remember(_: dict[str, Any]) -> Reply:  # runs while the scripted server holds its lock:
        asked.set()  # nothing else asks the model while it waits
        answer.wait(timeout=scaled(60))
        return Reply(
            content=json.dumps({"memories": [{"kind": "fact", "key": "name", "value": "Ada"}]})
        )

    model = ScriptedOpenAI()
    model.load(Reply(content="Hello Ada."))
    model.respond("Extract what the user explicitly asked to be remembered", remember)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(
        REDIS_URL=redis_url,
        GRAPHWRIGHT_KEY_PREFIX=prefix,
        GRAPHWRIGHT_GRAPHS=PLUGIN,
        GRAPHWRIGHT_CLAIM_IDLE_MS="1000",
        GRAPHWRIGHT_LOCK_TTL_S="1.5",
        PYTHONPATH=str(ROOT),
        OPENAI_API_KEY="sk-test",
        OPENAI_BASE_URL=model.base_url,
        OPENAI_MODEL="scripted",
        OPENAI_MAX_RETRIES="0",
    )
    logs = {name: tmp_path / f"{name}.log" for name in ("A", "B")}
    procs: list[subprocess.Popen[bytes]] = []

    def worker(name: str) -> subprocess.Popen[bytes]:
        with logs[name].open("wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "graphwright", "worker", "--name", name],
                env=env,
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        procs.append(proc)
        return proc

    sdk = get_sync_client(url=remote.url, api_key=None)
    tid = sdk.threads.create()["thread_id"]
    run = sdk.runs.create(
        tid, "agent", input={"goal": "My name is Ada."}, metadata={"user_id": "ada"}
    )
    try:
        first = worker("A")
        until(asked.is_set, "A to ask the model what to remember")
        first.send_signal(signal.SIGSTOP)
        until(lambda: not client.exists(remote.orch.keys.lock(tid)), "A's lock to expire")
        worker("B")
        until(lambda: sdk.runs.get(tid, run["run_id"])["status"] == "success", "B to end the run")
        before = _everything(remote.orch, tid, run["run_id"])
        answer.set()  # A gets its extraction the moment it thaws
        first.send_signal(signal.SIGCONT)
        until(
            lambda: STOPPED in logs["A"].read_bytes(),
            "A to find that it lost the run",
            timeout_s=30,
        )
        assert _everything(remote.orch, tid, run["run_id"]) == before
        assert before["memories"] == []  # A took the note before it froze: nobody stores it
    finally:
        answer.set()
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=scaled(15))
        model.close()


def _everything(orch: Orchestrator, thread_id: str, run_id: str) -> dict[str, object]:
    """What a thawed executor could still touch outside the checkpoints, raw from Redis."""
    return {
        "meta": orch.client.hgetall(orch.keys.meta(thread_id)),
        "record": RunStore(orch.client, orch.keys).raw(thread_id, run_id),
        "events": orch.client.xrange(stream_key(orch.keys, thread_id, run_id)),
        "trace": orch.trace(thread_id),
        "memories": [m.model_dump() for m in orch.memories("ada")],
    }


def _tool_call_id(message: object) -> str | None:
    if isinstance(message, dict):
        return message.get("tool_call_id") if message.get("type") == "tool" else None
    return getattr(message, "tool_call_id", None)
