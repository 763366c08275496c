"""``/ok``, ``/health`` and ``/info``: is the service up, and what is it."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from graphwright.server.deps import Guarded
from graphwright.server.schemas import Health

router = APIRouter(tags=["system"])


@router.get("/ok", response_model=Health)  # the one endpoint open to everyone
@router.get("/health", response_model=Health, dependencies=Guarded)
def health() -> Health:
    return Health()


@router.get("/info", dependencies=Guarded)
def info() -> dict[str, Any]:
    return {"version": "0.1.0", "flags": {"assistants": True, "crons": False, "langsmith": False}}
