"""A step whose tasks saved their writes but whose checkpoint was never written.

LangGraph reads such a thread with nothing `next` (every task of the step has its writes)
and no interrupt, yet the run is not over: resume applies the saved writes and goes on. A new
run on it would add a second turn on top of an unfinished one (a user asking again books twice).
"""

from __future__ import annotations

from typing import Any

import pytest
import redis

from graphwright import Orchestrator
from graphwright.nodes.gate_models import decide_all
from graphwright_errors import UserError

EMAIL = 'Email li@example.com with the subject "Weekly report" saying the report is ready.'


def outbox(orch: Orchestrator) -> list[bytes]:
    return orch.client.lrange(orch.keys.outbox(), 0, -1)


def cut_after_the_effect(orch: Orchestrator, monkeypatch: pytest.MonkeyPatch) -> None:
    """Redis goes away as the step that sent the email writes its checkpoint (once).

    Its task's writes (the tool result) are saved; the checkpoint after them is not.
    """
    saver = type(orch.asaver)
    original = saver.aput
    cut = {"done": False}

    async def aput(self: Any, *args: Any, **kwargs: Any) -> Any:
        if outbox(orch) and not cut["done"]:
            cut["done"] = True
            raise redis.ConnectionError("Redis went away (test)")
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(saver, "aput", aput)


def test_a_step_cut_before_its_checkpoint_is_resumed_not_run_over(
    orch: Orchestrator, monkeypatch: pytest.MonkeyPatch
) -> None:
    gated = orch.invoke("agent", EMAIL, thread_id="cut")
    assert gated.pending is not None
    with monkeypatch.context() as patch:
        cut_after_the_effect(orch, patch)
        failed = orch.resume("cut", decide_all(gated.pending, "approve"))
    assert failed.status == "failed" and len(outbox(orch)) == 1, failed
    assert orch.state("cut").status == "failed"
    with pytest.raises(UserError, match="unfinished run"):
        orch.invoke("agent", EMAIL, thread_id="cut")
    # As a process killed there leaves it: recorded running, its lock gone with it.
    orch.client.hset(orch.keys.meta("cut"), "status", "running")
    assert orch.state("cut").status == "failed"
    done = orch.resume("cut")
    assert done.status == "completed", done
    assert len(outbox(orch)) == 1 and "Weekly report" in (done.answer or "")
