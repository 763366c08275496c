"""``/threads/{thread_id}/runs``: create, wait for, stream, list, join and cancel runs."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

from fastapi import APIRouter, HTTPException
from sse_starlette import EventSourceResponse
from starlette.concurrency import run_in_threadpool

from checkpoints.errors import GraphwrightError
from graphwright.locking import ThreadBusyError, held
from graphwright.orchestrator import Orchestrator
from graphwright.serialize import jsonable
from graphwright.server import access
from graphwright.server.access import Grant, visible_thread
from graphwright.server.deps import Orch, Store, Svc
from graphwright.server.limits import RateLimited
from graphwright.server.runs import TERMINAL, RunStore, execute
from graphwright.server.schemas import Run, RunCreate

router = APIRouter(tags=["runs"])


def start(orch: Orchestrator, store: RunStore, thread_id: str, body: RunCreate,
          grant: Grant) -> Run:
    visible_thread(orch, grant, thread_id)
    body.metadata = grant.metadata or body.metadata  # as the auth handlers left it
    orch.graphs.get(body.assistant_id)
    if held(orch.client, orch.keys, thread_id):
        raise ThreadBusyError(f"thread {thread_id!r} is busy with another run "
                              f"(multitask_strategy {body.multitask_strategy or 'reject'})")
    return store.create(thread_id, body)


def final_values(orch: Orchestrator, thread_id: str) -> dict[str, Any]:
    snap = orch.snapshot(thread_id)
    values: dict[str, Any] = jsonable(snap.values)
    interrupts = [{"value": jsonable(i.value), "id": i.id} for t in snap.tasks for i in t.interrupts]
    if interrupts:
        values["__interrupt__"] = interrupts
    return values


async def finished(orch: Orchestrator, store: RunStore, thread_id: str, run_id: str,
                   timeout_s: float) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while (await run_in_threadpool(store.get, thread_id, run_id)).status not in TERMINAL:
        if loop.time() > deadline:
            raise HTTPException(status_code=408, detail=f"run {run_id} is still running")
        await asyncio.sleep(0.02)
    return await run_in_threadpool(final_values, orch, thread_id)


def run_inline(orch: Orchestrator, store: RunStore, run: Run, body: RunCreate) -> dict[str, Any]:
    for _ in execute(orch, store, run, body):  # drive the run to its end
        pass
    return final_values(orch, run.thread_id)


@router.post("/threads/{thread_id}/runs/wait", dependencies=RateLimited)
async def wait_run(thread_id: str, body: RunCreate, svc: Svc,
                   grant: access.RunCreate) -> dict[str, Any]:
    run = await run_in_threadpool(start, svc.orch, svc.store, thread_id, body, grant)
    if svc.queue_waits:
        await run_in_threadpool(svc.store.enqueue, run)
        return await finished(svc.orch, svc.store, thread_id, run.run_id, 600)
    return await run_in_threadpool(run_inline, svc.orch, svc.store, run, body)


def sse(orch: Orchestrator, store: RunStore, run: Run, body: RunCreate,
        modes: list[str]) -> Iterator[dict[str, str]]:
    def event(name: str, data: Any) -> dict[str, str]:
        return {"event": name, "data": json.dumps(data, ensure_ascii=False, default=str)}

    yield event("metadata", {"run_id": run.run_id, "attempt": 1})
    try:
        for step in execute(orch, store, run, body):
            if step.kind == "result":
                continue
            if "updates" in modes:
                yield event("updates", {step.node: step.update})
            if "values" in modes and step.kind == "step":
                yield event("values", jsonable(orch.snapshot(run.thread_id).values))
        if "values" in modes:
            yield event("values", final_values(orch, run.thread_id))
    except GraphwrightError as exc:
        yield event("error", {"error": type(exc).__name__, "message": str(exc)})
        return
    yield event("end", {"run_id": run.run_id, "status": store.get(run.thread_id, run.run_id).status})


@router.post("/threads/{thread_id}/runs/stream", dependencies=RateLimited)
def stream_run(thread_id: str, body: RunCreate, orch: Orch, store: Store,
               grant: access.RunCreate) -> EventSourceResponse:
    run = start(orch, store, thread_id, body, grant)
    modes: list[str] = [body.stream_mode] if isinstance(body.stream_mode, str) else list(body.stream_mode)
    return EventSourceResponse(sse(orch, store, run, body, modes),
                               headers={"Content-Location": f"/threads/{thread_id}/runs/{run.run_id}"})


@router.post("/threads/{thread_id}/runs", response_model=Run, dependencies=RateLimited)
def create_run(thread_id: str, body: RunCreate, orch: Orch, store: Store,
               grant: access.RunCreate) -> Run:
    run = start(orch, store, thread_id, body, grant)
    store.enqueue(run)
    return run


@router.get("/threads/{thread_id}/runs", response_model=list[Run])
def list_runs(thread_id: str, orch: Orch, store: Store, grant: access.ThreadRead,
              limit: int = 10) -> list[Run]:
    visible_thread(orch, grant, thread_id)
    return store.list(thread_id, limit)


@router.get("/threads/{thread_id}/runs/{run_id}", response_model=Run)
def get_run(thread_id: str, run_id: str, orch: Orch, store: Store, grant: access.ThreadRead) -> Run:
    visible_thread(orch, grant, thread_id)
    return store.get(thread_id, run_id)


@router.get("/threads/{thread_id}/runs/{run_id}/join")
async def join_run(thread_id: str, run_id: str, orch: Orch, store: Store,
                   grant: access.ThreadRead, timeout_s: float = 600) -> dict[str, Any]:
    await run_in_threadpool(visible_thread, orch, grant, thread_id)
    return await finished(orch, store, thread_id, run_id, timeout_s)


@router.post("/threads/{thread_id}/runs/{run_id}/cancel", status_code=202)
def cancel_run(thread_id: str, run_id: str, orch: Orch, store: Store,
               grant: access.ThreadUpdate) -> None:
    visible_thread(orch, grant, thread_id)
    run = store.get(thread_id, run_id)
    if run.status == "pending":
        store.update(thread_id, run_id, status="interrupted", error="cancelled before it started")
    elif run.status == "running":
        raise ThreadBusyError(f"run {run_id} is running; it stops at its next gate or budget")
