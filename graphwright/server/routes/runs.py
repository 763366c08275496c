"""``/runs`` and ``/threads/{thread_id}/runs``: create, wait for, stream, join, cancel and
delete runs, on a thread or stateless. Every run's events are relayed from its Redis
stream, wherever it executes, so any stream can be joined again with ``Last-Event-ID``."""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import JSONResponse, Response
from sse_starlette import EventSourceResponse
from starlette.concurrency import run_in_threadpool

from graphwright.server.deps import Store, Svc
from graphwright.server.launch import Launcher, relay
from graphwright.server.schemas import BatchItem, CancelMany, Run, RunCreate

router = APIRouter(tags=["runs"])
LastEventId = Annotated[str | None, Header(alias="Last-Event-ID")]


def streaming(launch: Launcher, run: Run, body: RunCreate, request: Request,
              last_event_id: str | None = None) -> EventSourceResponse:
    base = f"/threads/{run.thread_id}/runs/{run.run_id}"
    cancel = body.on_disconnect == "cancel"
    return EventSourceResponse(
        relay(launch, run, body.modes(), request, last_event_id, cancel_on_disconnect=cancel),
        headers={"Location": f"{base}/stream", "Content-Location": base}, ping=10)


@router.post("/threads/{thread_id}/runs/stream")
async def stream_run(thread_id: str, body: RunCreate, svc: Svc, request: Request) -> EventSourceResponse:
    launch = Launcher(svc)
    run = await run_in_threadpool(launch.start, thread_id, body, background=False)
    return streaming(launch, run, body, request)


@router.post("/runs/stream")
async def stream_stateless(body: RunCreate, svc: Svc, request: Request) -> EventSourceResponse:
    launch = Launcher(svc)
    run = await run_in_threadpool(launch.start, None, body, background=False)
    return streaming(launch, run, body, request)


@router.post("/threads/{thread_id}/runs/wait")
async def wait_run(thread_id: str, body: RunCreate, svc: Svc) -> JSONResponse:
    launch = Launcher(svc)
    run = await run_in_threadpool(launch.start, thread_id, body, background=False)
    return await waited(launch, run)


@router.post("/runs/wait")
async def wait_stateless(body: RunCreate, svc: Svc) -> JSONResponse:
    launch = Launcher(svc)
    run = await run_in_threadpool(launch.start, None, body, background=False)
    return await waited(launch, run)


async def waited(launch: Launcher, run: Run) -> JSONResponse:
    await launch.finished(run)
    output = await run_in_threadpool(launch.output, run)
    return JSONResponse(output, headers={"Content-Location": f"/threads/{run.thread_id}/runs/{run.run_id}"})


@router.post("/threads/{thread_id}/runs", response_model=Run)
def create_run(thread_id: str, body: RunCreate, svc: Svc) -> Run:
    return Launcher(svc).start(thread_id, body, background=True)


@router.post("/runs", response_model=Run)
def create_stateless(body: RunCreate, svc: Svc) -> Run:
    return Launcher(svc).start(None, body, background=True)


@router.post("/runs/batch", response_model=list[Run])
def create_batch(body: list[BatchItem], svc: Svc) -> list[Run]:
    launch = Launcher(svc)
    return [launch.start(item.thread_id, RunCreate.model_validate(item.model_dump(exclude={"thread_id"})),
                         background=True) for item in body]


@router.get("/threads/{thread_id}/runs", response_model=list[Run])
def list_runs(thread_id: str, store: Store, limit: int = 10, offset: int = 0,
              status: str | None = None) -> list[Run]:
    return store.list(thread_id, limit, offset, status)


@router.get("/threads/{thread_id}/runs/{run_id}", response_model=Run)
def get_run(thread_id: str, run_id: str, store: Store) -> Run:
    return store.get(thread_id, run_id)


@router.delete("/threads/{thread_id}/runs/{run_id}", status_code=204)
def delete_run(thread_id: str, run_id: str, svc: Svc) -> Response:
    Launcher(svc).delete(thread_id, run_id)
    return Response(status_code=204)


@router.get("/threads/{thread_id}/runs/{run_id}/join")
async def join_run(thread_id: str, run_id: str, svc: Svc) -> JSONResponse:
    launch = Launcher(svc)
    run = await run_in_threadpool(svc.store.get, thread_id, run_id)
    return await waited(launch, run)


@router.get("/threads/{thread_id}/runs/{run_id}/stream")
async def join_stream(thread_id: str, run_id: str, svc: Svc, request: Request,
                      last_event_id: LastEventId = None,
                      stream_mode: Annotated[list[str] | None, Query()] = None,
                      cancel_on_disconnect: bool = False) -> EventSourceResponse:
    launch = Launcher(svc)
    run = await run_in_threadpool(svc.store.get, thread_id, run_id)
    modes = [m for m in stream_mode or [] if m]
    return EventSourceResponse(relay(launch, run, modes, request, last_event_id,
                                     cancel_on_disconnect=cancel_on_disconnect), ping=10)


@router.get("/threads/{thread_id}/stream")
async def join_thread_stream(thread_id: str, svc: Svc, request: Request,
                             last_event_id: LastEventId = None,
                             stream_mode: Annotated[list[str] | None, Query()] = None) -> EventSourceResponse:
    launch = Launcher(svc)
    run = await run_in_threadpool(launch.latest, thread_id)
    return EventSourceResponse(relay(launch, run, [m for m in stream_mode or [] if m], request, last_event_id),
                               ping=10)


@router.post("/threads/{thread_id}/runs/{run_id}/cancel", status_code=202)
async def cancel_run(thread_id: str, run_id: str, svc: Svc, wait: bool = False,
                     action: str = "interrupt") -> Response:
    launch = Launcher(svc)
    await run_in_threadpool(launch.cancel, thread_id, run_id, action)
    if wait:
        run = await run_in_threadpool(svc.store.get, thread_id, run_id)
        await launch.finished(run)
        return Response(status_code=204)
    return Response(status_code=202)


@router.post("/runs/cancel", status_code=204)
async def cancel_many(body: CancelMany, svc: Svc, action: str = "interrupt") -> Response:
    await run_in_threadpool(Launcher(svc).cancel_many, body, action)
    await asyncio.sleep(0)
    return Response(status_code=204)

