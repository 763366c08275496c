"""Redis restarted mid-run (AOF on): short outages are ridden through, long ones fail clearly."""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from checkpoints.errors import RedisUnavailableError
from checkpoints.keys import Keys
from graphwright import Orchestrator, Settings
from graphwright.offline import OfflineChatModel
from graphwright.results import RunResult
from graphwright.testing.redis_servers import Server, free_port, start_server

GOAL = 'Schedule "Design review" on 2026-12-01 from 10:00 to 11:00.'
AOF = ("--appendonly", "yes", "--appendfsync", "always")


class Restartable:
    """A redis-server with AOF on that can be stopped and started again on its port."""

    def __init__(self, workdir: Path) -> None:
        self.workdir, self.port = workdir, free_port()
        self.server: Server = start_server(workdir, *AOF, port=self.port)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def outage(self, seconds: float) -> None:
        self.server.stop()  # a clean shutdown: the AOF is flushed
        time.sleep(seconds)  # the outage itself is the scenario
        self.server = start_server(self.workdir, *AOF, port=self.port)


@pytest.fixture
def restartable(tmp_path: Path) -> Iterator[Restartable]:
    r = Restartable(tmp_path / "redis")
    yield r
    r.server.stop()


def orchestrator(r: Restartable, retry_s: float) -> Orchestrator:
    settings = Settings(_env_file=None, REDIS_URL=r.url, GRAPHWRIGHT_KEY_PREFIX="b",  # type: ignore[call-arg]
                        GRAPHWRIGHT_GRAPHS="tests.slow_graphs:register",
                        GRAPHWRIGHT_REDIS_RETRY_S=str(retry_s))
    return Orchestrator(settings=settings, model=OfflineChatModel())


def run_through(r: Restartable, orch: Orchestrator, outage_s: float) -> RunResult | BaseException:
    """Start the run, restart Redis while its slow read runs, return how the run ended."""
    outcome: list[RunResult | BaseException] = []

    def run() -> None:
        try:
            outcome.append(orch.invoke("slow_agent", GOAL, thread_id="b"))
        except BaseException as exc:  # the test inspects it
            outcome.append(exc)

    runner = threading.Thread(target=run)
    runner.start()
    probe = redis.Redis(port=r.port)
    deadline = time.monotonic() + 60
    while probe.get("b:slow:started") != b"1":
        assert time.monotonic() < deadline and runner.is_alive(), outcome
        time.sleep(0.02)
    probe.close()
    r.outage(outage_s)
    runner.join(120)
    return outcome[0]


def calendar(r: Restartable) -> int:
    return len(redis.Redis(port=r.port).hvals(Keys(prefix="b").calendar()))


@pytest.mark.parametrize("outage_s", [3.0, 10.0])
def test_a_run_rides_through_a_redis_restart(restartable: Restartable, outage_s: float) -> None:
    result = run_through(restartable, orchestrator(restartable, retry_s=15), outage_s)
    assert isinstance(result, RunResult), result
    assert result.status == "completed" and "Design review" in (result.answer or "")
    assert calendar(restartable) == 1


def test_an_outage_past_the_retry_budget_fails_clearly_and_resume_completes(
    restartable: Restartable,
) -> None:
    # A 1 s budget against an 8 s outage stands for the default 15 s budget against 60 s
    # (the outage outlasts the slow read, its step's checkpoint and the budget together);
    # GRAPHWRIGHT_TEST_FULL_OUTAGE=1 runs the real thing.
    full = os.environ.get("GRAPHWRIGHT_TEST_FULL_OUTAGE") == "1"
    orch = orchestrator(restartable, retry_s=15 if full else 1)
    failed = run_through(restartable, orch, 60.0 if full else 8.0)
    if isinstance(failed, RunResult):
        assert failed.status == "failed" and "Redis" in (failed.error or ""), failed
    else:
        assert isinstance(failed, RedisUnavailableError), failed
        assert re.search(r"Redis .*(not reachable|unreachable)", str(failed)), failed
    done = orch.resume("b")
    assert done.status == "completed" and calendar(restartable) == 1
