"""A lock holder frozen past its lock's expiry: the thread moves on without it, and when it
thaws every write it tries is refused, so the thread's history is a single run's."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
import redis

from graphwright import Orchestrator, Settings
from graphwright.checkpoints.keys import Keys
from graphwright.offline import OfflineChatModel
from graphwright.testing.until import scaled
from tests.support.paths import ROOT

# Slow: a second process frozen past its lock
pytestmark = pytest.mark.slow

GOAL = 'Schedule "Design review" on 2026-12-01 from 10:00 to 11:00.'
TTL_S = "1.5"


def wait_for(check: object, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + scaled(timeout)
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


def orchestrator(redis_url: str, prefix: str) -> Orchestrator:
    settings = Settings(
        _env_file=None,
        REDIS_URL=redis_url,
        GRAPHWRIGHT_KEY_PREFIX=prefix,  # type: ignore[call-arg]
        GRAPHWRIGHT_GRAPHS="tests.support.slow_graphs:register",
        GRAPHWRIGHT_LOCK_TTL_S=TTL_S,
    )
    return Orchestrator(settings=settings, model=OfflineChatModel())


def shape(orch: Orchestrator, thread: str) -> list[tuple[int, list[str]]]:
    return [(h.step, h.node) for h in orch.history(thread)]


def test_a_frozen_holder_is_fenced_out_after_a_takeover(
    redis_url: str, prefix: str, client: redis.Redis
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(
        REDIS_URL=redis_url,
        GRAPHWRIGHT_KEY_PREFIX=prefix,
        PYTHONPATH=str(ROOT),
        GRAPHWRIGHT_GRAPHS="tests.support.slow_graphs:register",
        GRAPHWRIGHT_LOCK_TTL_S=TTL_S,
    )
    first = subprocess.Popen(
        [sys.executable, "-m", "graphwright", "run", "slow_agent", GOAL, "--thread", "f", "--json"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    keys = Keys(prefix=prefix)
    try:
        wait_for(lambda: client.get(f"{prefix}:slow:started") == b"1")  # inside the slow read
        first.send_signal(signal.SIGSTOP)
        wait_for(lambda: client.get(keys.lock("f")) is None)  # its lock expired unrenewed
        orch = orchestrator(redis_url, prefix)
        second = orch.resume("f")  # takes the thread over with a newer fencing token
        assert second.status == "completed", second.error
        before = (shape(orch, "f"), len(orch.trace("f")), client.hgetall(keys.meta("f")))
    finally:
        first.send_signal(signal.SIGCONT)
    out, err = first.communicate(timeout=scaled(60))
    assert first.returncode != 0, out
    assert "newer run" in err or "lock" in err, err
    # Nothing the thawed process tried landed: checkpoints, trace and status are the second run's.
    assert (shape(orch, "f"), len(orch.trace("f")), client.hgetall(keys.meta("f"))) == before
    reference = orchestrator(redis_url, prefix + "ref")
    assert reference.invoke("slow_agent", GOAL, thread_id="f").status == "completed"
    assert [n for _, n in shape(orch, "f")] == [n for _, n in shape(reference, "f")]
    assert len(client.hvals(keys.calendar())) == 1


def test_a_deleted_threads_fence_counter_outlives_it(redis_url: str, prefix: str) -> None:
    orch = orchestrator(redis_url, prefix)
    orch.invoke("agent", "订单 A1001 到哪了？", thread_id="reused")
    first = int(orch.client.get(orch.keys.fence("reused")) or 0)
    orch.delete("reused")
    assert orch.client.ttl(orch.keys.fence("reused")) > 0  # kept for a while, not forever
    # A thread created again under the same id never hands out an earlier run's token.
    with orch._lock("reused") as lock:
        assert lock.fence > first + 1
    orch.client.close()
