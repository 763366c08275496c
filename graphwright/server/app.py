"""`graphwright serve`: the LangGraph API endpoints that `langgraph-sdk` calls, on Redis alone.

Each registered graph is an assistant (its id is the graph name). Runs wait, stream
(server-sent events) or go to the background queue that `graphwright worker` reads.
This module only builds the app; each resource's endpoints live in `routes/`.
"""

from __future__ import annotations

import redis
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse
from langgraph.store.base import InvalidNamespaceError
from langgraph_sdk import Auth

from graphwright.locking import ThreadBusyError
from graphwright.nodes.gate_models import GateDecisionError
from graphwright.orchestrator import Orchestrator
from graphwright.project import HttpConfig
from graphwright.server.auth import access, browsers
from graphwright.server.auth.authority import Authority, configured_auth
from graphwright.server.auth.browsers import BrowserGuard, Origins, own_names
from graphwright.server.background.lifespan import lifespan
from graphwright.server.background.local_runs import LocalRuns
from graphwright.server.errors import UnprocessableError
from graphwright.server.extras.process_metrics import CountRequests, HttpFigures
from graphwright.server.http.cors import allow_origins, cors_options
from graphwright.server.http.deps import Guarded, Service
from graphwright.server.http.request_limits import BodyLimit
from graphwright.server.http.routes import (
    a2a,
    assistants,
    crons,
    docs,
    mcp,
    metrics,
    review,
    runs,
    store,
    system,
    thread_stream,
    threads,
)
from graphwright.server.http.user_app import Authenticated, checked_app
from graphwright.server.records.assistant_store import AssistantStore
from graphwright.server.records.cron_store import InvalidScheduleError
from graphwright.server.records.run_store import RunStore
from graphwright.server.runs.run_headers import RememberHeaders
from graphwright_errors import (
    ConflictError,
    GraphwrightError,
    InfrastructureError,
    NotFoundError,
    UserError,
)

STATUS_OF_ERROR = (
    (NotFoundError, 404),
    (ThreadBusyError, 409),
    (ConflictError, 409),
    (GateDecisionError, 422),
    (UnprocessableError, 422),
    (InvalidScheduleError, 422),
    (UserError, 400),
    (InfrastructureError, 503),
)
RETRY_AFTER_S = "5"  # what a client should wait when Redis (or another dependency) is down


async def graphwright_error(request: Request, exc: Exception) -> JSONResponse:
    """A graphwright error as the HTTP status its kind maps to, with `detail` as the reference."""
    status = next((code for kind, code in STATUS_OF_ERROR if isinstance(exc, kind)), 500)
    headers = {"Retry-After": RETRY_AFTER_S} if status == 503 else None
    return JSONResponse({"detail": str(exc)}, status_code=status, headers=headers)


async def redis_error(request: Request, exc: Exception) -> JSONResponse:
    """A Redis error no layer below turned into an InfrastructureError.

    Still the store's fault, except a refused command, which is a bug of ours (500), unless Redis is
    read-only or full.
    """
    if type(exc) is redis.ResponseError:
        raise exc
    return JSONResponse(
        {"detail": f"Redis is unavailable: {type(exc).__name__}"},
        status_code=503,
        headers={"Retry-After": RETRY_AFTER_S},
    )


async def invalid_namespace(request: Request, exc: Exception) -> PlainTextResponse:
    """A namespace LangGraph's store refuses (a NUL byte, the reserved `langgraph` root).

    400, as the reference answers it (its routes' own label checks are 422s).
    """
    return PlainTextResponse(str(exc), status_code=400)


def create_app(
    orch: Orchestrator,
    *,
    api_key: str | None = None,
    queue_waits: bool = False,
    auth: Auth | None = None,
    jobs: int = 10,
    whole: bool = False,
) -> FastAPI:
    """The service over one Orchestrator; every endpoint but `/ok` needs the caller let in.

    `auth` (or the `GRAPHWRIGHT_AUTH` setting, or `auth.path` in `langgraph.json`) is a
    `langgraph_sdk.Auth` that decides who the caller is and what they may do; without one,
    `api_key` is the one key.
    `queue_waits` sends waits and streams through the worker queue too (the API process
    then runs no graph, it relays each run's events from Redis); otherwise they execute in
    the API process, up to `jobs` at once. Background runs, and runs with
    `after_seconds`, go to the workers: with `whole` (`serve` without `--queue`)
    to this process's own worker, which shares the `jobs` bound, and crons fire here too.
    """
    if auth is None:
        auth = configured_auth(
            orch.settings.auth, orch.project.auth_path() if orch.project is not None else None
        )
    run_store = RunStore.of(orch)
    local = LocalRuns(orch, run_store, limit=jobs)
    span = lifespan(
        orch,
        local,
        Authority(auth=auth) if auth is not None else None,
        queue=queue_waits,
        run_here=whole and not queue_waits,
    )
    app = FastAPI(
        title="graphwright",
        version="0.1.0",
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
        lifespan=span,
        description="LangGraph-compatible API on Redis: assistants, threads, runs, review.",
    )
    app.state.authority = Authority(auth=auth, api_key=api_key)
    app.state.service = Service(
        orch=orch, store=run_store, local=local, api_key=api_key, queue_waits=queue_waits
    )
    app.add_exception_handler(GraphwrightError, graphwright_error)
    app.add_exception_handler(redis.RedisError, redis_error)
    app.add_exception_handler(InvalidNamespaceError, invalid_namespace)
    app.add_middleware(BodyLimit, max_bytes=orch.settings.max_body_bytes)
    app.state.http_figures = HttpFigures()
    app.add_middleware(CountRequests, figures=app.state.http_figures)  # reads the matched route
    http = orch.project.config.http if orch.project is not None else HttpConfig()
    app.add_middleware(RememberHeaders)  # runs get the request's id, start and caller
    cors = cors_options(orch.settings.cors_origins, http.cors)
    names = [h for h in orch.settings.allowed_hosts.split(",") if h.strip()]
    app.add_middleware(
        BrowserGuard,
        open_server=auth is None and api_key is None,
        origins=Origins.of(cors),
        hosts=own_names(names),
    )
    allow_origins(app, orch.settings.cors_origins, http.cors)  # outermost: a preflight needs no key
    app.state.review_secret = browsers.secret_of(orch.client, orch.keys.review_secret())
    AssistantStore.of(orch).ensure_graphs(orch)
    # a resource route that names no action would be open to every user: refuse to start
    access.audit([r for m in (assistants, threads, runs, store, crons) for r in m.router.routes])
    prefix = (http.mount_prefix or "").rstrip("/")
    app.state.mount_prefix = prefix  # /mcp calls the app itself under it
    if not http.disable_meta:
        app.include_router(system.router, prefix=prefix)
        app.include_router(metrics.router, prefix=prefix)  # open, as /ok: scrapers hold no key
    for resource, off in (
        (assistants, http.disable_assistants),
        (threads, http.disable_threads),
        (runs, http.disable_runs),
        (store, http.disable_store),
        (crons, http.disable_runs),
        (docs, False),
    ):
        if not off:
            app.include_router(resource.router, prefix=prefix, dependencies=Guarded)
    if not http.disable_mcp:  # its own inner calls carry the caller's headers: authorized as any
        app.include_router(mcp.router, prefix=prefix)
    if not http.disable_a2a:  # the same
        app.include_router(a2a.router, prefix=prefix)
    if not http.disable_runs:  # the same; it starts runs, so off with them, as the reference
        app.include_router(thread_stream.router, prefix=prefix)
    app.include_router(review.router)  # its own check: the signed login cookie, never ?api_key=
    if orch.project is not None and http.app:  # after the API: its routes win a clash
        user = checked_app(orch.project.user_app(), http.app)
        app.mount("", Authenticated(user, app.state.authority))
    return app
