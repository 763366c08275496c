"""Every run ends: a run taken over before its first checkpoint, a run that fails before
its graph starts, a caller cancelled around the lock, Redis errors under a worker, pending
runs cancelled, crons after an outage and waits through a failover (issue: every run ends)."""

from __future__ import annotations

import json
from typing import Any

from graphwright import Orchestrator
from graphwright.server.execution import Executor
from graphwright.server.runs import RunStore
from graphwright.server.schemas import RunCreate

FIRST = "What is 2 + 3?"
SECOND = "And what is 7 * 6?"


def cut_before_first_checkpoint(orch: Orchestrator, store: RunStore, tid: str, goal: str) -> str:
    """A run as a worker cut from Redis between ``run_start`` and its first checkpoint leaves
    it: recorded running, owned by the cut worker, the thread marked running, no checkpoint."""
    run = store.create(tid, RunCreate(assistant_id="agent", input={"goal": goal}), queue=False)
    store.update(tid, run.run_id, status="running", started="1", owner="cut-worker")
    orch.thread_meta.write(tid, None, graph="agent", status="running", thread_id=tid)
    orch.tracer.emit(tid, "run_start", run_id=run.run_id, graph="agent", input={"goal": goal})
    return run.run_id


def asked(orch: Orchestrator, tid: str) -> list[str]:
    """What the user asked on the thread, in order, as its checkpointed state holds it."""
    values: dict[str, Any] = orch.snapshot(tid).values
    return [str(m.content) for m in values.get("messages", []) if m.type == "human"]


def test_a_run_taken_over_before_its_first_checkpoint_runs_with_its_input(
        orch: Orchestrator) -> None:
    store = RunStore.of(orch)
    tid = orch.create_thread("cut-first", {})
    run_id = cut_before_first_checkpoint(orch, store, tid, FIRST)
    assert Executor(orch, store).run(tid, run_id) == "done"
    run = store.raw(tid, run_id)
    assert run["status"] == "success", run.get("error")  # not EmptyInputError
    assert any(FIRST in text for text in asked(orch, tid))


def test_a_follow_up_taken_over_before_its_first_checkpoint_answers_the_new_message(
        orch: Orchestrator) -> None:
    store = RunStore.of(orch)
    tid = orch.create_thread("cut-follow-up", {})
    first = store.create(tid, RunCreate(assistant_id="agent", input={"goal": FIRST}), queue=False)
    assert Executor(orch, store).run(tid, first.run_id) == "done"
    run_id = cut_before_first_checkpoint(orch, store, tid, SECOND)
    assert Executor(orch, store).run(tid, run_id) == "done"
    assert store.raw(tid, run_id)["status"] == "success"
    said = asked(orch, tid)
    assert any(SECOND in text for text in said), json.dumps(said)  # not ended without it
