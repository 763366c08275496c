"""``graphwright serve``: the LangGraph API endpoints that ``langgraph-sdk`` calls, on Redis alone.

Each registered graph is an assistant (its id is the graph name). Runs wait, stream
(server-sent events) or go to the background queue that ``graphwright worker`` reads.
This module only builds the app; each resource's endpoints live in ``routes/``.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from checkpoints.errors import GraphwrightError, InfrastructureError, NotFoundError, UserError
from graphwright.locking import ThreadBusyError
from graphwright.orchestrator import Orchestrator
from graphwright.server.deps import Guarded, Service
from graphwright.server.errors import UnprocessableError
from graphwright.server.routes import assistants, crons, review, runs, store, system, threads
from graphwright.server.runs import RunStore
from nodes.gate_models import GateDecisionError

STATUS_OF_ERROR = ((NotFoundError, 404), (ThreadBusyError, 409), (GateDecisionError, 422),
                   (UnprocessableError, 422),
                   (UserError, 400), (InfrastructureError, 503))


async def graphwright_error(request: Request, exc: Exception) -> JSONResponse:
    status = next((code for kind, code in STATUS_OF_ERROR if isinstance(exc, kind)), 500)
    return JSONResponse({"detail": str(exc)}, status_code=status)


def create_app(orch: Orchestrator, *, api_key: str | None = None, queue_waits: bool = False) -> FastAPI:
    """The service over one Orchestrator; with ``api_key`` every endpoint but health needs it.

    ``queue_waits`` sends waits and streams through the worker queue too (the API process
    then runs no graph, it relays each run's events from Redis); otherwise they execute in
    a thread of the API process. Background runs always go to the workers.
    """
    app = FastAPI(title="graphwright", version="0.1.0",
                  description="LangGraph-compatible API on Redis: assistants, threads, runs, review.")
    app.state.service = Service(orch=orch, store=RunStore(orch.client, orch.keys),
                                api_key=api_key, queue_waits=queue_waits)
    app.add_exception_handler(GraphwrightError, graphwright_error)
    app.include_router(system.router)
    for resource in (assistants, threads, runs, store, crons, review):
        app.include_router(resource.router, dependencies=Guarded)
    return app
