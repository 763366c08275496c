"""`/ok`, `/health` and `/info`: is the service up, and what is it."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Any

from fastapi import APIRouter

from graphwright.server.background.worker import live_workers
from graphwright.server.http.deps import Guarded, Orch, Svc
from graphwright.server.schemas.run_bodies import Health

router = APIRouter(tags=["system"])


def _version(package: str) -> str | None:
    try:
        return version(package)
    except PackageNotFoundError:
        return None


@router.get("/ok", response_model=Health)  # the one endpoint open to everyone
@router.get("/health", response_model=Health, dependencies=Guarded)
def health() -> Health:
    return Health()


@router.get("/info", dependencies=Guarded)
def info(orch: Orch, svc: Svc) -> dict[str, Any]:
    """The reference's `/info` (chat UIs call it on connect), plus graphwright's own part.

    `workers` live on the queue (`serve`'s own included); under `serve --queue`, 0 means background
    runs, waits and streams wait for a `graphwright worker`.
    """
    workers = live_workers(orch)
    return {
        "version": _version("graphwright"),
        "langgraph_py_version": _version("langgraph"),
        "flags": {
            "assistants": True,
            "crons": True,
            "langsmith": False,
            "langsmith_tracing_replicas": False,
            "langsmith_tracing_session_on_runs": False,
        },
        "host": {
            "kind": "self-hosted",
            "project_id": None,
            "host_revision_id": None,
            "revision_id": None,
            "tenant_id": None,
        },
        "graphwright": {
            "graphs": orch.graphs.names(),
            "key_prefix": orch.keys.prefix,
            "queue": orch.keys.queue(),
            "cors": bool(orch.settings.cors_origins),
            "workers": workers,
            "runs_here": not svc.queue_waits,
            **(
                {"warning": "no graphwright worker is running: runs wait for one"}
                if svc.queue_waits and not workers
                else {}
            ),
        },
    }
