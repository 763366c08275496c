"""``graphwright serve``: the LangGraph API endpoints that ``langgraph-sdk`` calls, on Redis alone.

Each registered graph is an assistant (its id is the graph name). Runs wait, stream
(server-sent events) or go to the background queue that ``graphwright worker`` reads.
"""

from __future__ import annotations

import asyncio
import hmac
import json
from collections.abc import Iterator
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Header, HTTPException, Query, Request
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.concurrency import run_in_threadpool

from checkpoints.errors import GraphwrightError, InfrastructureError, NotFoundError, UserError
from graphs.context import RunInput
from graphwright.drawing import drawable
from graphwright.locking import ThreadBusyError, held
from graphwright.native import output_of
from graphwright.orchestrator import Orchestrator
from graphwright.serialize import jsonable
from graphwright.server import review
from graphwright.server.runs import TERMINAL, THREAD_STATUS, RunStore, execute, iso
from graphwright.server.schemas import (
    Assistant,
    AssistantSearch,
    Checkpoint,
    Health,
    HistoryRequest,
    Run,
    RunCreate,
    Thread,
    ThreadCreate,
    ThreadSearch,
    ThreadStateBody,
)
from nodes.gate_models import GateDecisionError

STATUS_OF_ERROR = ((NotFoundError, 404), (ThreadBusyError, 409), (GateDecisionError, 422),
                   (UserError, 400), (InfrastructureError, 503))


def create_app(orch: Orchestrator, *, api_key: str | None = None, queue_waits: bool = False) -> FastAPI:
    """The service over one Orchestrator; with ``api_key`` every endpoint but health needs it.

    ``queue_waits`` sends ``runs.wait`` through the worker queue too (the API process then
    runs no graph); otherwise it runs in the API process. Streams always run here.
    """
    store = RunStore(orch.client, orch.keys)

    def authorize(x_api_key: Annotated[str | None, Header()] = None,
                  api_key_param: Annotated[str | None, Query(alias="api_key")] = None) -> None:
        if api_key is None:
            return
        given = x_api_key or api_key_param or ""
        if not hmac.compare_digest(given.encode(), api_key.encode()):
            raise HTTPException(status_code=401, detail="missing or wrong API key")

    app = FastAPI(title="graphwright", version="0.1.0",
                  description="LangGraph-compatible API on Redis: assistants, threads, runs, review.")
    guarded = [Depends(authorize)]

    @app.exception_handler(GraphwrightError)
    async def graphwright_error(request: Request, exc: GraphwrightError) -> JSONResponse:
        status = next((code for kind, code in STATUS_OF_ERROR if isinstance(exc, kind)), 500)
        return JSONResponse({"detail": str(exc)}, status_code=status)

    @app.get("/ok", response_model=Health)
    @app.get("/health", response_model=Health)
    def health() -> Health:
        return Health()

    # --- assistants ----------------------------------------------------------

    def assistant(name: str) -> Assistant:
        spec = orch.graphs.get(name)
        return Assistant(assistant_id=name, graph_id=name, name=name, description=spec.description,
                         created_at=iso(0), updated_at=iso(0))

    @app.post("/assistants/search", response_model=list[Assistant], dependencies=guarded)
    def search_assistants(body: AssistantSearch) -> list[Assistant]:
        names = [n for n in orch.graphs.names() if body.graph_id in (None, n)]
        return [assistant(n) for n in names[body.offset: body.offset + body.limit]]

    @app.get("/assistants/{assistant_id}", response_model=Assistant, dependencies=guarded)
    def get_assistant(assistant_id: str) -> Assistant:
        return assistant(assistant_id)

    @app.get("/assistants/{assistant_id}/graph", dependencies=guarded)
    def get_graph(assistant_id: str, xray: bool | int = False) -> dict[str, Any]:
        graph = orch.compiled(assistant_id)
        return jsonable(drawable(graph, xray=bool(xray)).to_json())  # type: ignore[no-any-return]

    @app.get("/assistants/{assistant_id}/schemas", dependencies=guarded)
    def get_schemas(assistant_id: str) -> dict[str, Any]:
        graph = orch.compiled(assistant_id)
        # Runs take {"goal", "constraints"} (or LangGraph-style messages); the state is the graph's.
        return {"graph_id": assistant_id, "input_schema": RunInput.model_json_schema(),
                "output_schema": graph.get_output_jsonschema(),
                "state_schema": graph.get_output_jsonschema(), "config_schema": None,
                "context_schema": None}

    # --- threads -------------------------------------------------------------

    def thread_body(thread_id: str, *, with_values: bool = True) -> Thread:
        meta = orch.meta(thread_id)
        if not meta:
            raise NotFoundError(f"no thread {thread_id!r}")
        status = THREAD_STATUS.get(orch.status_of(meta), "idle")
        values: dict[str, Any] | None = None
        interrupts: dict[str, list[dict[str, Any]]] = {}
        if meta.get("graph") and with_values:
            snap = orch.snapshot(thread_id)
            values = jsonable(snap.values)
            for task in snap.tasks:
                if task.interrupts:
                    interrupts[task.id] = [{"value": jsonable(i.value), "id": i.id} for i in task.interrupts]
        created = float(meta.get("created_at") or meta.get("updated_at") or 0)
        return Thread(thread_id=thread_id, created_at=iso(created),
                      updated_at=iso(float(meta.get("updated_at") or created)),
                      metadata=json.loads(meta.get("metadata") or "{}"), status=status,
                      values=values, interrupts=interrupts)

    @app.post("/threads", response_model=Thread, dependencies=guarded)
    def create_thread(body: ThreadCreate) -> Thread:
        if body.thread_id and orch.meta(body.thread_id) and body.if_exists == "do_nothing":
            return thread_body(body.thread_id)
        return thread_body(orch.create_thread(body.thread_id, body.metadata))

    @app.get("/threads/{thread_id}", response_model=Thread, dependencies=guarded)
    def get_thread(thread_id: str) -> Thread:
        return thread_body(thread_id)

    @app.post("/threads/search", response_model=list[Thread], dependencies=guarded)
    def search_threads(body: ThreadSearch) -> list[Thread]:
        out = []
        for info in orch.threads():
            thread = thread_body(info.thread_id, with_values=False)
            if body.status and thread.status != body.status:
                continue
            if body.metadata and any(thread.metadata.get(k) != v for k, v in body.metadata.items()):
                continue
            out.append(thread)
        return out[body.offset: body.offset + body.limit]

    @app.delete("/threads/{thread_id}", status_code=204, dependencies=guarded)
    def delete_thread(thread_id: str) -> None:
        if not orch.meta(thread_id):
            raise NotFoundError(f"no thread {thread_id!r}")
        orch.delete(thread_id)

    def state_body(thread_id: str, snap: Any) -> ThreadStateBody:
        conf = snap.config.get("configurable") or {}
        parent = (snap.parent_config or {}).get("configurable") or {}
        tasks = [{"id": t.id, "name": t.name, "error": t.error, "state": None,
                  "interrupts": [{"value": jsonable(i.value), "id": i.id} for i in t.interrupts]}
                 for t in snap.tasks]
        return ThreadStateBody(
            values=jsonable(snap.values), next=list(snap.next),
            checkpoint=Checkpoint(thread_id=thread_id, checkpoint_id=conf.get("checkpoint_id")),
            metadata=jsonable(snap.metadata or {}), created_at=snap.created_at,
            parent_checkpoint=Checkpoint(thread_id=thread_id, checkpoint_id=parent["checkpoint_id"])
            if parent.get("checkpoint_id") else None,
            tasks=tasks, interrupts=[i for t in tasks for i in t["interrupts"]],
        )

    @app.get("/threads/{thread_id}/state", response_model=ThreadStateBody, dependencies=guarded)
    def get_state(thread_id: str) -> ThreadStateBody:
        meta = orch.meta(thread_id)
        if not meta:
            raise NotFoundError(f"no thread {thread_id!r}")
        if not meta.get("graph"):
            return ThreadStateBody(values={}, next=[], created_at=None,
                                   checkpoint=Checkpoint(thread_id=thread_id, checkpoint_id=None))
        return state_body(thread_id, orch.snapshot(thread_id))

    @app.post("/threads/{thread_id}/history", response_model=list[ThreadStateBody], dependencies=guarded)
    def get_history(thread_id: str, body: HistoryRequest) -> list[ThreadStateBody]:
        if not orch.meta(thread_id).get("graph"):
            return []
        return [state_body(thread_id, s) for s in orch.snapshots(thread_id, body.limit)]

    # --- runs ----------------------------------------------------------------

    def start(thread_id: str, body: RunCreate) -> Run:
        if not orch.meta(thread_id):
            raise NotFoundError(f"no thread {thread_id!r}")
        orch.graphs.get(body.assistant_id)
        if held(orch.client, orch.keys, thread_id):
            raise ThreadBusyError(f"thread {thread_id!r} is busy with another run "
                                  f"(multitask_strategy {body.multitask_strategy or 'reject'})")
        return store.create(thread_id, body)

    def final_values(thread_id: str) -> dict[str, Any]:
        snap = orch.snapshot(thread_id)
        graph = orch.compiled(orch.meta(thread_id)["graph"])
        values: dict[str, Any] = jsonable(output_of(graph, snap.values))
        interrupts = [{"value": jsonable(i.value), "id": i.id} for t in snap.tasks for i in t.interrupts]
        if interrupts:
            values["__interrupt__"] = interrupts
        return values

    async def finished(thread_id: str, run_id: str, timeout_s: float) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while (await run_in_threadpool(store.get, thread_id, run_id)).status not in TERMINAL:
            if loop.time() > deadline:
                raise HTTPException(status_code=408, detail=f"run {run_id} is still running")
            await asyncio.sleep(0.02)
        return await run_in_threadpool(final_values, thread_id)

    @app.post("/threads/{thread_id}/runs/wait", dependencies=guarded)
    async def wait_run(thread_id: str, body: RunCreate) -> dict[str, Any]:
        run = await run_in_threadpool(start, thread_id, body)
        if queue_waits:
            await run_in_threadpool(store.enqueue, run)
            return await finished(thread_id, run.run_id, 600)
        return await run_in_threadpool(run_inline, run, body)

    def run_inline(run: Run, body: RunCreate) -> dict[str, Any]:
        for _ in execute(orch, store, run, body):  # drive the run to its end
            pass
        return final_values(run.thread_id)

    @app.post("/threads/{thread_id}/runs/stream", dependencies=guarded)
    def stream_run(thread_id: str, body: RunCreate) -> StreamingResponse:
        run = start(thread_id, body)
        modes: list[str] = [body.stream_mode] if isinstance(body.stream_mode, str) else list(body.stream_mode)
        return StreamingResponse(sse(run, body, modes), media_type="text/event-stream",
                                 headers={"Content-Location": f"/threads/{thread_id}/runs/{run.run_id}"})

    def sse(run: Run, body: RunCreate, modes: list[str]) -> Iterator[str]:
        def event(name: str, data: Any) -> str:
            return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False, default=str)}\n\n"

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
                yield event("values", final_values(run.thread_id))
        except GraphwrightError as exc:
            yield event("error", {"error": type(exc).__name__, "message": str(exc)})
            return
        yield event("end", {"run_id": run.run_id, "status": store.get(run.thread_id, run.run_id).status})

    @app.post("/threads/{thread_id}/runs", response_model=Run, dependencies=guarded)
    def create_run(thread_id: str, body: RunCreate) -> Run:
        run = start(thread_id, body)
        store.enqueue(run)
        return run

    @app.get("/threads/{thread_id}/runs", response_model=list[Run], dependencies=guarded)
    def list_runs(thread_id: str, limit: int = 10) -> list[Run]:
        return store.list(thread_id, limit)

    @app.get("/threads/{thread_id}/runs/{run_id}", response_model=Run, dependencies=guarded)
    def get_run(thread_id: str, run_id: str) -> Run:
        return store.get(thread_id, run_id)

    @app.get("/threads/{thread_id}/runs/{run_id}/join", dependencies=guarded)
    async def join_run(thread_id: str, run_id: str, timeout_s: float = 600) -> dict[str, Any]:
        return await finished(thread_id, run_id, timeout_s)

    @app.post("/threads/{thread_id}/runs/{run_id}/cancel", status_code=202, dependencies=guarded)
    def cancel_run(thread_id: str, run_id: str) -> None:
        run = store.get(thread_id, run_id)
        if run.status == "pending":
            store.update(thread_id, run_id, status="interrupted", error="cancelled before it started")
        elif run.status == "running":
            raise ThreadBusyError(f"run {run_id} is running; it stops at its next gate or budget")

    review.mount(app, orch, guarded)
    return app
