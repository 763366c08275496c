"""What every request handler needs, read from `request.app.state`.

The Orchestrator, the run store, the settings of this service, and authentication.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

import redis
from fastapi import Depends, Request
from starlette.requests import HTTPConnection

from graphwright.checkpoints.keys import Keys
from graphwright.orchestrator import Orchestrator
from graphwright.server.aio import AsyncClient, async_client
from graphwright.server.auth.access import current_user
from graphwright.server.auth.typed_body import validated_body
from graphwright.server.background.local_runs import LocalRuns
from graphwright.server.records.run_store import RunStore

WAITING_CLIENTS = 5000


@dataclass
class Service:
    """The state one app serves: built once by `create_app`, shared by all routers."""

    orch: Orchestrator
    store: RunStore
    local: LocalRuns
    api_key: str | None = None
    queue_waits: bool = False
    _aio: AsyncClient | None = field(default=None, repr=False)

    def aio(self) -> AsyncClient:
        """The asyncio client of the server's loop (made there, on first use).

        For waits, each waiting client on a connection of its own (Redis serves 10,000 by default).
        """
        if self._aio is None:
            self._aio = async_client(self.orch.settings, max_connections=WAITING_CLIENTS)
        return self._aio


def service(request: HTTPConnection) -> Service:
    """The app's `Service`, set up by `create_app` (a request's or a WebSocket's)."""
    found: Service = request.app.state.service
    return found


# The dependencies are coroutines: FastAPI runs a sync dependency in a thread of its pool,
# a hop per dependency per request for what is an attribute read.


async def service_dependency(request: Request) -> Service:
    """`service` as a FastAPI dependency."""
    return service(request)


async def orchestrator(request: Request) -> Orchestrator:
    """The service's Orchestrator, as a FastAPI dependency."""
    return service(request).orch


async def run_store(request: Request) -> RunStore:
    """The service's run store, as a FastAPI dependency."""
    return service(request).store


async def redis_client(request: Request) -> redis.Redis:
    """The Orchestrator's Redis client, as a FastAPI dependency."""
    return service(request).orch.client


async def keys(request: Request) -> Keys:
    """The Orchestrator's key layout, as a FastAPI dependency."""
    return service(request).orch.keys


Orch = Annotated[Orchestrator, Depends(orchestrator)]
Store = Annotated[RunStore, Depends(run_store)]
Svc = Annotated[Service, Depends(service_dependency)]
# Authentication, then the body against the route's model (before the grant reads it); each
# route adds its own `access` grant.
Guarded = [Depends(current_user), Depends(validated_body)]
