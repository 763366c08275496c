"""What every request handler needs, read from ``request.app.state``: the Orchestrator, the
run store, the settings of this service, and the API-key check."""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from typing import Annotated

import redis
from fastapi import Depends, Header, HTTPException, Query, Request

from checkpoints.keys import Keys
from graphwright.orchestrator import Orchestrator
from graphwright.server.runs import RunStore


@dataclass
class Service:
    """The state one app serves: built once by ``create_app``, shared by all routers."""

    orch: Orchestrator
    store: RunStore
    api_key: str | None = None
    queue_waits: bool = False


def service(request: Request) -> Service:
    found: Service = request.app.state.service
    return found


def orchestrator(request: Request) -> Orchestrator:
    return service(request).orch


def run_store(request: Request) -> RunStore:
    return service(request).store


def redis_client(request: Request) -> redis.Redis:
    return service(request).orch.client


def keys(request: Request) -> Keys:
    return service(request).orch.keys


def authorize(request: Request,
              x_api_key: Annotated[str | None, Header()] = None,
              api_key_param: Annotated[str | None, Query(alias="api_key")] = None) -> None:
    """Refuse the request unless it carries the service's API key (when one is set)."""
    expected = service(request).api_key
    if expected is None:
        return
    given = x_api_key or api_key_param or ""
    if not hmac.compare_digest(given.encode(), expected.encode()):
        raise HTTPException(status_code=401, detail="missing or wrong API key")


Orch = Annotated[Orchestrator, Depends(orchestrator)]
Store = Annotated[RunStore, Depends(run_store)]
Svc = Annotated[Service, Depends(service)]
Guarded = [Depends(authorize)]
