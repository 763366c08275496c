"""Crons with three worker processes: every due run is enqueued and run exactly once, and
SIGKILLing a worker mid-way loses none (the effects are counted in a file, outside Redis).

The test runs a 1-second cron for 8 seconds; `python -m bench.crons` runs the issue's
2-second cron for 20 seconds the same way.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.cron_campaign import PLUGIN, campaign
from graphwright.testing.service import Service, service_for

# Slow: three worker processes, one killed, racing for due crons
pytestmark = pytest.mark.slow


@pytest.fixture
def service(redis_url: str, prefix: str) -> Iterator[Service]:
    with service_for(redis_url, prefix, PLUGIN, worker=False) as svc:
        yield svc


def test_three_workers_run_each_due_cron_run_once_though_one_is_killed(
    service: Service, redis_url: str, prefix: str, tmp_path: Path
) -> None:
    effects = tmp_path / "effects.txt"
    expected, seen = campaign(service, redis_url, prefix, effects, every_s=1, for_s=8, kill=True)
    assert len(expected) >= 8
    assert sorted(seen) == sorted(expected)  # none lost, none extra
    assert set(seen.values()) == {1}  # each exactly once
