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

from graphwright import Orchestrator, Settings
from graphwright.checkpoints.keys import Keys
from graphwright.nodes.gate_models import GateDecisionError, decide_all
from graphwright.offline import OfflineChatModel
from graphwright.results import RunResult
from graphwright.testing.until import scaled
from graphwright_errors import UserError
from tests.support.paths import ROOT

# Slow: kill -9 of a CLI process at named moments, then resume
pytestmark = pytest.mark.slow

GOAL = 'Schedule "Design review" on 2026-12-01 from 10:00 to 11:00.'
CLI = [sys.executable, "-m", "graphwright"]


def env_for(redis_url: str, prefix: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(
        REDIS_URL=redis_url,
        GRAPHWRIGHT_KEY_PREFIX=prefix,
        GRAPHWRIGHT_GRAPHS="tests.support.slow_graphs:register",
        PYTHONPATH=str(ROOT),
    )
    return env


def wait_for(check: object, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + scaled(timeout)
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args, "--json"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=scaled(120),
        check=False,
    )


def calendar(client: redis.Redis, prefix: str) -> int:
    return len(client.hvals(Keys(prefix=prefix).calendar()))


def effect_lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def start_run(env: dict[str, str], graph: str, thread: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [*CLI, "run", graph, GOAL, "--thread", thread],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def kill(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=scaled(10))


def orchestrator(redis_url: str, prefix: str) -> Orchestrator:
    settings = Settings(
        _env_file=None,
        REDIS_URL=redis_url,
        GRAPHWRIGHT_KEY_PREFIX=prefix,  # type: ignore[call-arg]
        GRAPHWRIGHT_GRAPHS="tests.support.slow_graphs:register",
    )
    return Orchestrator(settings=settings, model=OfflineChatModel())


def settle(orch: Orchestrator, thread: str, action: str, **kw: str) -> RunResult:
    return orch.resume(thread, decide_all(orch.state(thread).pending, action, **kw))  # type: ignore[arg-type]


@pytest.mark.parametrize("moment", ["after_effect", "before_effect"])
def test_killed_inside_an_ungated_write_stops_at_the_gate_with_its_key(
    redis_url: str,
    prefix: str,
    client: redis.Redis,
    tmp_path: Path,
    moment: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The process dies mid-write; the resumed run neither re-runs it by itself nor fails it."""
    import json

    effects = tmp_path / "effects"
    monkeypatch.setenv("SLOW_GRAPHS_EFFECTS", str(effects))
    env = {**env_for(redis_url, prefix), "SLOW_GRAPHS_EFFECTS": str(effects)}
    client.set(f"{prefix}:slow:hold", 1)  # the write waits after its effect until released
    proc = start_run(env, "slow_write", "w")
    marker = "write_effected" if moment == "after_effect" else "write_started"
    wait_for(lambda: client.get(f"{prefix}:slow:{marker}") == b"1")
    kill(proc)
    client.delete(f"{prefix}:slow:hold")
    assert len(effect_lines(effects)) == (1 if moment == "after_effect" else 0)
    orch = orchestrator(redis_url, prefix)
    assert orch.state("w").status == "failed"  # running, but its process is gone
    result = orch.resume("w")
    assert result.status == "interrupted" and result.pending is not None
    (pending,) = result.pending.calls
    assert pending.kind == "outcome_unknown" and pending.tool == "create_event"
    assert pending.idempotency_key == f"w:{pending.id}"
    assert int(client.get(f"{prefix}:slow:write_started") or 0) == 1  # not run again by itself
    with pytest.raises(GateDecisionError, match="unknown"):  # not something to approve
        settle(orch, "w", "approve")
    if moment == "after_effect":  # the reviewer checked: it happened (through the CLI)
        done = cli(env, "resume", "w", "--mark-done", "booked, confirmation 42")
        assert done.returncode == 0, done.stderr
        final = RunResult.model_validate(json.loads(done.stdout))
    else:  # the reviewer checked: it did not happen; run it again under the same key
        final = settle(orch, "w", "retry")
    assert final.status == "completed" and "Design review" in (final.answer or "")
    assert effect_lines(effects) == [pending.idempotency_key]  # exactly one effect, that key


def test_killed_at_the_gate_resumes_with_approval_and_writes_once(
    redis_url: str, prefix: str, client: redis.Redis
) -> None:
    env = env_for(redis_url, prefix)
    proc = start_run(env, "slow_agent_gated", "g")
    meta = Keys(prefix=prefix).meta("g")
    wait_for(lambda: client.hget(meta, "status") == b"interrupted")
    kill(proc)
    assert calendar(client, prefix) == 0
    orch = orchestrator(redis_url, prefix)
    result = settle(orch, "g", "approve")
    assert result.status == "completed" and "Created 'Design review'" in (result.answer or "")
    assert calendar(client, prefix) == 1
    with pytest.raises(UserError, match="already finished"):
        orch.resume("g")
    assert calendar(client, prefix) == 1


def test_killed_inside_an_approved_write_after_its_effect_settles_at_the_gate(
    redis_url: str,
    prefix: str,
    client: redis.Redis,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    effects = tmp_path / "effects"
    monkeypatch.setenv("SLOW_GRAPHS_EFFECTS", str(effects))
    env = {**env_for(redis_url, prefix), "SLOW_GRAPHS_EFFECTS": str(effects)}
    orch = orchestrator(redis_url, prefix)
    assert orch.invoke("slow_write_gated", GOAL, thread_id="a").status == "interrupted"
    client.set(f"{prefix}:slow:hold", 1)
    proc = subprocess.Popen(
        [*CLI, "resume", "a", "--approve"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_for(lambda: client.get(f"{prefix}:slow:write_effected") == b"1")
    kill(proc)
    client.delete(f"{prefix}:slow:hold")
    result = orch.resume("a")
    assert result.status == "interrupted" and result.pending is not None
    assert result.pending.calls[0].kind == "outcome_unknown"
    stopped = settle(orch, "a", "reject", reason="undone by hand")
    assert stopped.status == "completed" and "rejected" in (stopped.answer or "")
    assert len(effect_lines(effects)) == 1


def test_a_crash_between_a_builtin_writes_effect_and_its_record_leaves_one_effect(
    redis_url: str, prefix: str, client: redis.Redis
) -> None:
    env = env_for(redis_url, prefix)
    goal = "Send an e-mail to li@example.com saying the review moved to 11:00"
    died = subprocess.run(
        [*CLI, "run", "mail_then_die", goal, "--thread", "m"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        timeout=scaled(120),
        check=False,
    )
    assert died.returncode == -signal.SIGKILL
    outbox = Keys(prefix=prefix).outbox()
    assert client.llen(outbox) == 1  # the effect happened; the executor never recorded it
    result = orchestrator(redis_url, prefix).resume("m")
    # send_email dedupes on the idempotency key, so re-running it under that key is safe.
    assert result.status == "completed", result.error
    assert client.llen(outbox) == 1


def test_a_retry_killed_after_its_effect_is_not_run_a_third_time_by_a_plain_resume(
    redis_url: str,
    prefix: str,
    client: redis.Redis,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A reviewer's retry allows one more attempt: killed after its effect, that attempt's
    outcome is unknown in turn and goes back to the reviewer (found by bench.chaos on the
    cluster: 'resume --retry' killed, then 'resume' ran the write again)."""
    effects = tmp_path / "effects"
    monkeypatch.setenv("SLOW_GRAPHS_EFFECTS", str(effects))
    env = {**env_for(redis_url, prefix), "SLOW_GRAPHS_EFFECTS": str(effects)}
    client.set(f"{prefix}:slow:hold", 1)  # each write waits after its effect until the kill
    kill_after(start_run(env, "slow_write", "r"), client, prefix, effects=1)
    orch = orchestrator(redis_url, prefix)
    assert orch.resume("r").pending is not None  # the first attempt's outcome is unknown
    retry = subprocess.Popen(
        [*CLI, "resume", "r", "--retry"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    kill_after(retry, client, prefix, effects=2)  # the reviewer's retry dies after its effect
    client.delete(f"{prefix}:slow:hold")
    result = orch.resume("r")
    assert len(effect_lines(effects)) == 2, "the retried write ran a third time"
    assert result.status == "interrupted" and result.pending is not None
    assert [c.kind for c in result.pending.calls] == ["outcome_unknown"]


def kill_after(
    proc: subprocess.Popen[bytes], client: redis.Redis, prefix: str, *, effects: int
) -> None:
    wait_for(lambda: int(client.get(f"{prefix}:slow:write_effected") or 0) == effects)
    kill(proc)
