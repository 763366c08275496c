"""`async def` tools in the executor: they run on the process's run loop, and a timeout
cancels the coroutine while a write's outcome stays unknown for a reviewer."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
import redis
from pydantic import BaseModel

from graphwright.checkpoints.keys import Keys
from graphwright.tools.executor import ToolCall, ToolExecutor
from graphwright.tools.registry import ToolRegistry
from graphwright.tools.runloop import run_loop, submit
from graphwright.tools.spec import ToolContext, ToolSpec


class NoArgs(BaseModel):
    pass


def executor(client: redis.Redis, prefix: str, func: Any, **kw: Any) -> ToolExecutor:
    spec = ToolSpec(name="t", description="t", args_model=NoArgs, func=func, **kw)
    return ToolExecutor(ToolRegistry([spec]), client, keys=Keys(prefix=prefix))


def test_an_async_tool_runs_on_the_run_loop(client: redis.Redis, prefix: str) -> None:
    seen: list[Any] = []

    async def tool(args: NoArgs, ctx: ToolContext) -> str:
        seen.append((asyncio.get_running_loop(), threading.current_thread().name))
        await asyncio.sleep(0)
        return "ok"

    obs = executor(client, prefix, tool).execute(
        ToolCall(name="t", args={}, id="c1"), thread_id="t1"
    )
    assert obs.ok and obs.result == "ok"
    assert seen == [(run_loop(), "gw-run-loop")]


@pytest.mark.parametrize("risk", ["read", "write"])
def test_a_timed_out_async_tool_is_cancelled(client: redis.Redis, prefix: str, risk: str) -> None:
    cancelled = threading.Event()
    finished = threading.Event()

    async def hang(args: NoArgs, ctx: ToolContext) -> str:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        finished.set()
        return "late"

    obs = executor(client, prefix, hang, timeout_s=0.2, risk=risk).execute(
        ToolCall(name="t", args={}, id="c1"), thread_id="t1"
    )
    assert cancelled.wait(5) and not finished.is_set()
    assert obs.error is not None
    if risk == "write":  # it may have taken effect before the cancel: a reviewer decides
        assert obs.error.type == "outcome_unknown" and obs.idempotency_key == "t1:c1"
        record = client.hgetall(Keys(prefix=prefix).idempotency("t1", "c1"))
        assert record[b"status"] == b"unknown"
    else:
        assert obs.error.type == "timeout" and obs.error.retryable


def test_aexecute_runs_a_sync_tool_without_blocking_the_loop(
    client: redis.Redis, prefix: str
) -> None:
    release = threading.Event()
    ex = executor(client, prefix, lambda a, c: release.wait(5) and "done")

    async def both() -> tuple[Any, bool]:
        running = asyncio.ensure_future(
            ex.aexecute(ToolCall(name="t", args={}, id="c1"), thread_id="t1")
        )
        await asyncio.sleep(0.05)  # the loop is free while the tool waits in its pool
        release.set()
        return await running, True

    obs, loop_was_free = submit(both()).result(10)
    assert loop_was_free and obs.ok and obs.result == "done"
