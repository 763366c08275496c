"""The kill -9 campaign of `bench.chaos`, 50 points through the CLI and workers, 16 through
the API process and a cron's worker (the bench runs 500+)."""

from __future__ import annotations

import pytest

from bench.chaos import campaign, table

# Slow: fifty kill -9s of CLI and worker processes at drawn moments
pytestmark = pytest.mark.slow


def test_fifty_kills_through_the_cli_and_workers_recover_exactly_once() -> None:
    points = campaign(
        50, ["cli", "worker"], parallel=4, delay_s=0.05, seed=7, report=lambda _: None
    )
    summary = table(points)
    assert all(p.ok for p in points), summary
    assert sum(p.duplicates for p in points) == 0 and sum(p.lost for p in points) == 0, summary
    # A kill inside the write always comes back as an unknown outcome at the gate.
    for p in points:
        if p.where.startswith("inside the write"):
            assert p.unknowns >= 1, summary


def test_kills_of_the_api_process_and_of_a_cron_worker_recover_exactly_once() -> None:
    points = campaign(16, ["api", "cron"], parallel=4, delay_s=0.05, seed=11, report=lambda _: None)
    summary = table(points)
    assert all(p.ok for p in points), summary
    assert sum(p.duplicates for p in points) == 0 and sum(p.lost for p in points) == 0, summary
    for p in points:
        if p.where.startswith("inside the write"):
            assert p.unknowns >= 1, summary
