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

from graphwright import Orchestrator, Settings
from graphwright.checkpoints.errors import RedisUnavailableError
from graphwright.checkpoints.keys import Keys
from graphwright.offline import OfflineChatModel
from graphwright.results import RunResult
from graphwright.testing.until import scaled, until
from tests.support.redis_faults import Restartable

# Slow: Redis stopped for seconds under a run: the outage is the scenario
pytestmark = pytest.mark.slow

GOAL = 'Schedule "Design review" on 2026-12-01 from 10:00 to 11:00.'
Outcome = RunResult | BaseException


@pytest.fixture
def restartable(tmp_path: Path) -> Iterator[Restartable]:
    r = Restartable(tmp_path / "redis")
    yield r
    r.server.stop()


def orchestrator(r: Restartable, retry_s: float) -> Orchestrator:
    settings = Settings(
        _env_file=None,
        REDIS_URL=r.url,
        GRAPHWRIGHT_KEY_PREFIX="b",  # type: ignore[call-arg]
        GRAPHWRIGHT_GRAPHS="tests.support.slow_graphs:register",
        GRAPHWRIGHT_REDIS_RETRY_S=str(retry_s),
    )
    return Orchestrator(settings=settings, model=OfflineChatModel())


def start_run(r: Restartable, orch: Orchestrator) -> tuple[threading.Thread, list[Outcome]]:
    """Start the run in a thread; return once its slow read runs, with where it will end."""
    outcome: list[Outcome] = []

    def run() -> None:
        try:
            outcome.append(orch.invoke("slow_agent", GOAL, thread_id="b"))
        except BaseException as exc:  # the test inspects it
            outcome.append(exc)

    runner = threading.Thread(target=run)
    runner.start()
    probe = redis.Redis(port=r.port)
    until(
        lambda: probe.get("b:slow:started") == b"1" or not runner.is_alive(),
        "the run's slow read to start",
    )
    probe.close()
    assert runner.is_alive(), outcome
    return runner, outcome


def run_through(r: Restartable, orch: Orchestrator, outage_s: float) -> tuple[Outcome, float]:
    """Restart Redis while the run's slow read runs; how the run ended and how long Redis
    was down."""
    runner, outcome = start_run(r, orch)
    down_s = r.outage(outage_s)
    until(lambda: not runner.is_alive(), "the run to end after Redis came back", timeout_s=120)
    return outcome[0], down_s


def calendar(r: Restartable) -> int:
    return len(redis.Redis(port=r.port).hvals(Keys(prefix="b").calendar()))


@pytest.mark.parametrize("outage_s", [3.0, 10.0])
def test_a_run_rides_through_a_redis_restart(restartable: Restartable, outage_s: float) -> None:
    budget = scaled(15)  # the default budget, stretched as far as the machine is slow
    result, down_s = run_through(restartable, orchestrator(restartable, retry_s=budget), outage_s)
    assert down_s < budget, f"Redis was down {down_s:.1f} s, past the {budget:.0f} s budget"
    assert isinstance(result, RunResult), result
    assert result.status == "completed" and "Design review" in (result.answer or "")
    assert calendar(restartable) == 1


def test_an_outage_past_the_retry_budget_fails_clearly_and_resume_completes(
    restartable: Restartable,
) -> None:
    # Redis stays down until the run gives up, however long the machine takes to get there:
    # the outage is measured, not assumed to outlast the slow read, the step's checkpoint
    # and the budget. A 1 s budget stands for the default 15 s one;
    # GRAPHWRIGHT_TEST_FULL_OUTAGE=1 runs the real thing.
    budget = 15.0 if os.environ.get("GRAPHWRIGHT_TEST_FULL_OUTAGE") == "1" else 1.0
    orch = orchestrator(restartable, retry_s=budget)
    runner, outcome = start_run(restartable, orch)
    started = time.monotonic()
    restartable.down()
    until(
        lambda: not runner.is_alive(),
        "the run to give up on the stopped Redis",
        timeout_s=60 + budget,
    )
    down_s = time.monotonic() - started
    restartable.up()
    failed = outcome[0]
    if isinstance(failed, RunResult):
        assert failed.status == "failed" and "Redis" in (failed.error or ""), (failed, down_s)
    else:
        assert isinstance(failed, RedisUnavailableError), (failed, down_s)
        assert re.search(r"Redis .*(not reachable|unreachable)", str(failed)), failed
    done = orch.resume("b")
    assert done.status == "completed" and calendar(restartable) == 1
