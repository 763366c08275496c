"""A worker killed with SIGKILL after its write's effect; a reviewer settles the thread from the
CLI (outside the run line) before another worker claims the dead worker's run. The claimed
run must not run its input again as new: the model, which gives fresh call ids, would plan
the write again and it would run twice (found by `bench.chaos` under CPU load).

Real parts: redis-server, worker and CLI processes, the scripted OpenAI-compatible model;
each effect is a file outside Redis.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.chaos_graphs import effects_of
from bench.chaos_model import ChaosModel
from graphwright.checkpoints.keys import Keys
from graphwright.server.records.run_store import RunStore
from graphwright.server.schemas.run_bodies import RunCreate
from graphwright.testing.until import scaled, until
from tests.support.paths import ROOT

# Slow: worker and CLI processes, one killed after its effect, then a takeover.
pytestmark = pytest.mark.slow

THREAD = "booking"
SLOW_S = "1.0"  # each slow step: the write sleeps this long after its effect, before its record


@pytest.fixture
def model() -> Iterator[ChaosModel]:
    served = ChaosModel()
    yield served
    served.close()


def environment(redis_url: str, prefix: str, model: ChaosModel, effects: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "GRAPHWRIGHT_"))}
    env.update(
        REDIS_URL=redis_url,
        GRAPHWRIGHT_KEY_PREFIX=prefix,
        GRAPHWRIGHT_GRAPHS="bench.chaos_graphs:register",
        GRAPHWRIGHT_CLAIM_IDLE_MS="1000",
        GRAPHWRIGHT_HOME=str(effects.parent / "home"),
        OPENAI_BASE_URL=model.base_url,
        OPENAI_API_KEY="chaos",
        OPENAI_MODEL="scripted",
        OPENAI_MAX_RETRIES="0",
        CHAOS_EFFECTS=str(effects),
        CHAOS_DELAY_S=SLOW_S,
        PYTHONPATH=str(ROOT),
    )
    return env


def graphwright(env: dict[str, str], *argv: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "graphwright", *argv],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def cli(env: dict[str, str], *argv: str) -> str:
    proc = graphwright(env, *argv, "--json")
    out, _ = proc.communicate(timeout=scaled(120))
    return out.decode()


def test_a_run_claimed_after_a_cli_resume_settled_its_write_does_not_run_it_again(
    redis_url: str, prefix: str, model: ChaosModel, tmp_path: Path
) -> None:
    import redis

    effects = tmp_path / "effects"
    effects.mkdir()
    env = environment(redis_url, prefix, model, effects)
    client = redis.Redis.from_url(redis_url)
    store = RunStore(client, Keys(prefix=prefix))
    run = store.create(
        THREAD, RunCreate(assistant_id="chaos_ungated", input={"goal": "book it"}), queue=True
    )
    workers: list[subprocess.Popen[bytes]] = []
    try:
        workers.append(graphwright(env, "worker", "--name", "A"))
        until(lambda: effects_of(effects, THREAD), "the write's effect", 90)
        workers[0].send_signal(signal.SIGKILL)  # after the effect, before its record and end
        workers[0].wait(timeout=scaled(10))
        assert store.get(THREAD, run.run_id).status == "running"  # nobody's now

        # The reviewer, from the CLI: the write's outcome is unknown; they find it done.
        out = cli(env, "resume", THREAD)
        assert "outcome_unknown" in out, out
        out = cli(env, "resume", THREAD, "--mark-done", "booked (checked by hand)")
        assert '"completed"' in out, out
        assert len(effects_of(effects, THREAD)) == 1

        workers.append(graphwright(env, "worker", "--name", "B"))  # claims A's run
        until(
            lambda: store.get(THREAD, run.run_id).status not in ("pending", "running"),
            "the claimed run to end",
            90,
        )
        assert len(effects_of(effects, THREAD)) == 1, effects_of(effects, THREAD)
        assert store.get(THREAD, run.run_id).status == "success"
    finally:
        for proc in workers:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=scaled(30))
        client.close()
