"""20 processes answer one gate at once: one proceeds, 19 are told it runs elsewhere, one effect.

The processes are forked from a server that imported the CLI once (multiprocessing's
forkserver), so the race is between 20 real processes, not 20 interpreter start-ups.
"""

from __future__ import annotations

import json
import multiprocessing
import time
from pathlib import Path

import pytest
import redis

from bench.chaos_points import cli_child
from graphwright import Orchestrator, Settings
from graphwright.offline import OfflineChatModel
from graphwright.testing.until import scaled

# Slow: twenty processes racing to approve one gate
pytestmark = pytest.mark.slow

GOAL = 'Schedule "Design review" on 2026-12-01 from 10:00 to 11:00.'
RACERS = 20


def test_twenty_approvals_race_one_proceeds(
    redis_url: str,
    prefix: str,
    client: redis.Redis,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    effects = tmp_path / "effects"
    monkeypatch.setenv("SLOW_GRAPHS_EFFECTS", str(effects))
    env = {
        "REDIS_URL": redis_url,
        "GRAPHWRIGHT_KEY_PREFIX": prefix,
        "SLOW_GRAPHS_EFFECTS": str(effects),
        "GRAPHWRIGHT_GRAPHS": "tests.support.slow_graphs:register",
        "OPENAI_API_KEY": "",
        "OPENAI_BASE_URL": "",
    }
    settings = Settings(
        _env_file=None,
        REDIS_URL=redis_url,
        GRAPHWRIGHT_KEY_PREFIX=prefix,  # type: ignore[call-arg]
        GRAPHWRIGHT_GRAPHS="tests.support.slow_graphs:register",
    )
    orch = Orchestrator(settings=settings, model=OfflineChatModel())
    assert orch.invoke("slow_write_gated", GOAL, thread_id="r").status == "interrupted"
    client.set(f"{prefix}:slow:hold", 1)  # the winner's write waits after its effect until released
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["graphwright.cli", "tests.support.slow_graphs"])
    racers = [
        ctx.Process(
            target=cli_child,
            args=(["resume", "r", "--approve", "--json"], env, str(tmp_path / f"out{i}")),
        )
        for i in range(RACERS)
    ]
    for p in racers:
        p.start()
    deadline = time.monotonic() + scaled(120)
    while sum(p.exitcode is not None for p in racers) < RACERS - 1:
        assert time.monotonic() < deadline, "the losers did not all finish"
        time.sleep(0.05)
    client.delete(f"{prefix}:slow:hold")
    for p in racers:
        p.join(scaled(60))
    outputs = [(p.exitcode, (tmp_path / f"out{i}").read_text()) for i, p in enumerate(racers)]
    winners = [out for code, out in outputs if code == 0]
    losers = [out for code, out in outputs if code != 0]
    assert len(winners) == 1 and json.loads(winners[0])["status"] == "completed"
    assert len(losers) == RACERS - 1
    assert all(code == 2 for code, _ in outputs if code != 0)
    assert all("already running in another process" in out for out in losers), losers[:2]
    assert len(effects.read_text().splitlines()) == 1
