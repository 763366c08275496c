"""Processes killed with SIGKILL mid-step or at a gate; a new process resumes from Redis."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from checkpoints.keys import Keys
from graphwright import Orchestrator, Settings, ThreadBusyError
from graphwright.offline import OfflineChatModel

ROOT = Path(__file__).resolve().parent.parent
GOAL = 'Schedule "Design review" on 2026-12-01 from 10:00 to 11:00.'
CLI = [sys.executable, "-m", "graphwright"]


def env_for(redis_url: str, prefix: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(REDIS_URL=redis_url, GRAPHWRIGHT_KEY_PREFIX=prefix,
               GRAPHWRIGHT_GRAPHS="tests.slow_graphs:register", PYTHONPATH=str(ROOT))
    return env


def wait_for(check: object, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args, "--json"], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False)


def answer_uninterrupted(redis_url: str, prefix: str, graph: str, *decision: str) -> str:
    import json

    env = env_for(redis_url, prefix + "ref")
    out = cli(env, "run", graph, GOAL, "--thread", "ref")
    if decision:
        out = cli(env, "resume", "ref", *decision)
    assert out.returncode == 0, out.stderr
    return str(json.loads(out.stdout)["answer"])


def effects(client: redis.Redis, prefix: str) -> dict[bytes, bytes]:
    return client.hgetall(Keys(prefix=prefix).effects())


def test_killed_mid_step_resumes_in_a_new_process_and_writes_once(
    redis_url: str, prefix: str, client: redis.Redis
) -> None:
    import json

    env = env_for(redis_url, prefix)
    proc = subprocess.Popen([*CLI, "run", "slow_agent", GOAL, "--thread", "k"], env=env, cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for(lambda: client.get(f"{prefix}:slow:started") == b"1")
    # The slow read is running; a second run on the thread is refused while it lives.
    settings = Settings(_env_file=None, REDIS_URL=redis_url, GRAPHWRIGHT_KEY_PREFIX=prefix,  # type: ignore[call-arg]
                        GRAPHWRIGHT_GRAPHS="tests.slow_graphs:register")
    with pytest.raises(ThreadBusyError, match="already running"):
        Orchestrator(settings=settings, model=OfflineChatModel()).resume("k")
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert effects(client, prefix) == {}
    status = json.loads(cli(env, "threads").stdout)[0]["status"]
    assert status == "failed"  # running, but its process is gone
    out = cli(env, "resume", "k")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["status"] == "completed"
    assert result["answer"] == answer_uninterrupted(redis_url, prefix, "slow_agent")
    assert effects(client, prefix) == {b"create_event": b"1"}
    assert client.get(f"{prefix}:slow:started") == b"2"  # the killed step ran again, the write once


def test_killed_at_the_gate_resumes_with_approval_and_writes_once(
    redis_url: str, prefix: str, client: redis.Redis
) -> None:
    import json

    env = env_for(redis_url, prefix)
    proc = subprocess.Popen([*CLI, "run", "slow_agent_gated", GOAL, "--thread", "g"], env=env,
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    meta = Keys(prefix=prefix).meta("g")
    wait_for(lambda: client.hget(meta, "status") == b"interrupted")
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    out = cli(env, "resume", "g", "--approve")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["status"] == "completed"
    assert result["answer"] == answer_uninterrupted(redis_url, prefix, "slow_agent_gated", "--approve")
    assert effects(client, prefix) == {b"create_event": b"1"}
    again = cli(env, "resume", "g", "--approve")
    assert again.returncode == 2 and effects(client, prefix) == {b"create_event": b"1"}
