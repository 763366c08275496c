"""An HTTP run's common path reaches Redis only through coroutines on the run loop: once its
graph is built, executing a run (pickup, events, start, end, record, lock) hands nothing of
graphwright's to a thread, and records the same end (its status and `show` summary) as before.
"""

from __future__ import annotations

import asyncio
import contextvars
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

from graphwright import Orchestrator, summary
from graphwright.server.records.run_store import RunStore
from graphwright.server.runs.execution import Executor
from graphwright.server.schemas.run_bodies import RunCreate

T = TypeVar("T")
ORDER = "Where is order A1001?"


# Set while the test executes its run: the run's tasks inherit it (the run loop's task is made
# in this thread's context), another test's worker sharing the run loop does not.
OURS: contextvars.ContextVar[bool] = contextvars.ContextVar("ours", default=False)


def execute_one(orch: Orchestrator, store: RunStore) -> tuple[str, str]:
    tid = orch.create_thread()
    run = store.create(tid, RunCreate(assistant_id="agent", input={"goal": ORDER}), queue=False)
    token = OURS.set(True)
    try:
        assert Executor(orch, store).run(tid, run.run_id) == "done"
    finally:
        OURS.reset(token)
    return tid, run.run_id


def test_an_http_run_hands_nothing_of_graphwrights_to_a_thread(
    orch: Orchestrator, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = RunStore.of(orch)
    execute_one(orch, store)  # the graph is built once, in the loop's executor
    hops: list[str] = []
    real = asyncio.to_thread

    async def counted(func: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        caller = sys._getframe(1).f_globals.get("__name__", "")
        if OURS.get() and caller.startswith("graphwright"):
            hops.append(f"{caller}: {getattr(func, '__qualname__', func)}")
        return await real(func, *args, **kwargs)

    monkeypatch.setattr(asyncio, "to_thread", counted)
    tid, run_id = execute_one(orch, store)
    monkeypatch.undo()
    assert hops == []
    record = store.raw(tid, run_id)
    assert record["status"] == "success", record.get("error")
    assert orch.meta(tid)["status"] == "completed"
    assert orch.meta(tid).get(summary.FIELD)  # the show summary, recorded at the run's end
