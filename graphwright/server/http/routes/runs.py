"""`/runs` and `/threads/{thread_id}/runs`.

Create, wait for, stream, join, cancel and delete runs, on a thread or stateless. Every run's events
are relayed from its Redis stream, wherever it executes, so any stream can be joined again with
`Last-Event-ID`.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import Response
from sse_starlette import EventSourceResponse

from graphwright.server.auth import access
from graphwright.server.auth.access import admit_run, visible_thread
from graphwright.server.http._waits import waiting
from graphwright.server.http.deps import Orch, Store, Svc
from graphwright.server.http.launch import Launcher, relay
from graphwright.server.http.request_limits import RateLimited, take_runs
from graphwright.server.offload import offload
from graphwright.server.schemas.run_bodies import BatchItem, CancelMany, Run, RunCreate

router = APIRouter(tags=["runs"])
LastEventId = Annotated[str | None, Header(alias="Last-Event-ID")]


def admitted(launch: Launcher, grant: access.Grant, thread_id: str | None, body: RunCreate) -> Run:
    """Admit (a webhook resolved, the grant's metadata added) and start a wait or a stream.

    One hop to the thread pool for both.
    """
    meta = admit_run(launch.orch, grant, thread_id, body)
    return launch.start(thread_id, body, background=False, meta=meta)


def streaming(
    launch: Launcher, run: Run, body: RunCreate, request: Request, last_event_id: str | None = None
) -> EventSourceResponse:
    base = f"/threads/{run.thread_id}/runs/{run.run_id}"
    cancel = body.on_disconnect == "cancel"
    return EventSourceResponse(
        relay(launch, run, body.modes(), last_event_id, cancel_on_disconnect=cancel),
        headers={"Location": f"{base}/stream", "Content-Location": base},
        ping=10,
    )


@router.post("/threads/{thread_id}/runs/stream", dependencies=RateLimited)
async def stream_run(
    thread_id: str, body: RunCreate, svc: Svc, request: Request, grant: access.RunStart
) -> EventSourceResponse:
    launch = Launcher(svc)
    run = await offload(admitted, launch, grant, thread_id, body)
    return streaming(launch, run, body, request)


@router.post("/runs/stream", dependencies=RateLimited)
async def stream_stateless(
    body: RunCreate, svc: Svc, request: Request, grant: access.RunStart
) -> EventSourceResponse:
    launch = Launcher(svc)
    run = await offload(admitted, launch, grant, None, body)
    return streaming(launch, run, body, request)


@router.post("/threads/{thread_id}/runs/wait", dependencies=RateLimited)
async def wait_run(thread_id: str, body: RunCreate, svc: Svc, grant: access.RunStart) -> Response:
    launch = Launcher(svc)
    run = await offload(admitted, launch, grant, thread_id, body)
    return await waiting(launch, run, cancel_on_disconnect=body.on_disconnect == "cancel")


@router.post("/runs/wait", dependencies=RateLimited)
async def wait_stateless(body: RunCreate, svc: Svc, grant: access.RunStart) -> Response:
    launch = Launcher(svc)
    run = await offload(admitted, launch, grant, None, body)
    return await waiting(launch, run, cancel_on_disconnect=body.on_disconnect == "cancel")


@router.post("/threads/{thread_id}/runs", response_model=Run, dependencies=RateLimited)
def create_run(thread_id: str, body: RunCreate, svc: Svc, grant: access.RunStart) -> Run:
    meta = admit_run(svc.orch, grant, thread_id, body)
    return Launcher(svc).start(thread_id, body, background=True, meta=meta)


@router.post("/runs", response_model=Run, dependencies=RateLimited)
def create_stateless(body: RunCreate, svc: Svc, grant: access.RunStart) -> Run:
    admit_run(svc.orch, grant, None, body)
    return Launcher(svc).start(None, body, background=True)


@router.post("/runs/batch", response_model=list[Run])
async def create_batch(
    body: list[BatchItem], svc: Svc, request: Request, grant: access.RunStart
) -> list[Run]:
    for item in body:  # each item may name only an assistant the caller may read
        await access.runnable_assistant(request, grant.user, item.assistant_id)
    return await offload(start_batch, body, svc, request, grant)


def start_batch(
    body: list[BatchItem], svc: Svc, request: Request, grant: access.Grant
) -> list[Run]:
    take_runs(request, grant.user, max(1, len(body)))  # each run counts, not the request
    launch = Launcher(svc)
    runs = [
        (item.thread_id, RunCreate.model_validate(item.model_dump(exclude={"thread_id"})))
        for item in body
    ]
    for thread_id, run in runs:
        admit_run(svc.orch, grant, thread_id, run)
    return [launch.start(thread_id, run, background=True) for thread_id, run in runs]


@router.get("/threads/{thread_id}/runs", response_model=list[Run])
def list_runs(
    thread_id: str,
    orch: Orch,
    store: Store,
    grant: access.ThreadRead,
    limit: int = 10,
    offset: int = 0,
    status: str | None = None,
) -> list[Run]:
    visible_thread(orch, grant, thread_id)
    return store.list(thread_id, limit, offset, status)


@router.get("/threads/{thread_id}/runs/{run_id}", response_model=Run)
def get_run(thread_id: str, run_id: str, orch: Orch, store: Store, grant: access.ThreadRead) -> Run:
    visible_thread(orch, grant, thread_id)
    return store.get(thread_id, run_id)


@router.delete("/threads/{thread_id}/runs/{run_id}", status_code=204)
def delete_run(thread_id: str, run_id: str, svc: Svc, grant: access.ThreadDelete) -> Response:
    visible_thread(svc.orch, grant, thread_id)
    Launcher(svc).delete(thread_id, run_id)
    return Response(status_code=204)


@router.get("/threads/{thread_id}/runs/{run_id}/join")
async def join_run(
    thread_id: str,
    run_id: str,
    svc: Svc,
    grant: access.ThreadRead,
    cancel_on_disconnect: bool = False,
) -> Response:
    launch = Launcher(svc)
    await offload(visible_thread, svc.orch, grant, thread_id)
    run = await offload(svc.store.get, thread_id, run_id)
    return await waiting(launch, run, cancel_on_disconnect=cancel_on_disconnect)


@router.get("/threads/{thread_id}/runs/{run_id}/stream")
async def join_stream(
    thread_id: str,
    run_id: str,
    svc: Svc,
    request: Request,
    grant: access.ThreadRead,
    last_event_id: LastEventId = None,
    stream_mode: Annotated[list[str] | None, Query()] = None,
    cancel_on_disconnect: bool = False,
) -> EventSourceResponse:
    launch = Launcher(svc)
    await offload(visible_thread, svc.orch, grant, thread_id)
    run = await offload(svc.store.get, thread_id, run_id)
    modes = [m for m in stream_mode or [] if m]
    return EventSourceResponse(
        relay(launch, run, modes, last_event_id, cancel_on_disconnect=cancel_on_disconnect),
        ping=10,
    )


@router.get("/threads/{thread_id}/stream")
async def join_thread_stream(
    thread_id: str,
    svc: Svc,
    request: Request,
    grant: access.ThreadRead,
    last_event_id: LastEventId = None,
    stream_mode: Annotated[list[str] | None, Query()] = None,
) -> EventSourceResponse:
    launch = Launcher(svc)
    await offload(visible_thread, svc.orch, grant, thread_id)
    run = await offload(launch.latest, thread_id)
    return EventSourceResponse(
        relay(launch, run, [m for m in stream_mode or [] if m], last_event_id), ping=10
    )


@router.post("/threads/{thread_id}/runs/{run_id}/cancel", status_code=202)
async def cancel_run(
    thread_id: str,
    run_id: str,
    svc: Svc,
    grant: access.ThreadUpdate,
    wait: bool = False,
    action: str = "interrupt",
) -> Response:
    launch = Launcher(svc)
    await offload(visible_thread, svc.orch, grant, thread_id)
    await offload(launch.cancel, thread_id, run_id, action)
    if wait:  # the reference answers with the run's result, as a join does
        run = await offload(svc.store.get, thread_id, run_id)
        return await waiting(launch, run, cancel_on_disconnect=False)
    return Response(status_code=202)


@router.post("/runs/cancel", status_code=204)
async def cancel_many(
    body: CancelMany, svc: Svc, grant: access.ThreadUpdate, action: str = "interrupt"
) -> Response:
    def visible(thread_id: str) -> bool:
        return grant.allows(svc.orch.meta(thread_id).get("metadata"))

    def cancel() -> None:  # Redis reads and writes: off the loop, in one hop
        if body.thread_id and svc.orch.meta(body.thread_id):  # another user's thread: not found
            visible_thread(svc.orch, grant, body.thread_id)
        Launcher(svc).cancel_many(body, action, visible)

    await offload(cancel)
    await asyncio.sleep(0)
    return Response(status_code=204)
