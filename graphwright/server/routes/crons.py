"""``/runs/crons``: schedules that start runs, on one thread or on a new thread each time.
The workers' schedulers start the runs (``cron_scheduler``); this router keeps the crons."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends
from pydantic import ConfigDict, Field

from graphwright.server.assistants_store import AssistantStore
from graphwright.server.cron_store import CronStore
from graphwright.server.deps import Orch
from graphwright.server.schemas import _Request
from graphwright_errors import NotFoundError

router = APIRouter(tags=["crons"])


class CronCreateBody(_Request):
    model_config = ConfigDict(extra="allow")  # the run's own fields (input, config, context, ...)
    assistant_id: str = Field(min_length=1)
    schedule: str
    end_time: str | None = None
    enabled: bool = True
    timezone: str | None = None
    on_run_completed: Literal["delete", "keep"] | None = None
    metadata: dict[str, Any] | None = None


class CronPatchBody(_Request):
    model_config = ConfigDict(extra="allow")


class CronSearchBody(_Request):
    assistant_id: str | None = None
    thread_id: str | None = None
    enabled: bool | None = None
    metadata: dict[str, Any] | None = None
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)
    sort_by: str | None = None
    sort_order: Literal["asc", "desc", "ASC", "DESC"] | None = None
    select: list[str] | None = None


class CronCountBody(_Request):
    assistant_id: str | None = None
    thread_id: str | None = None
    metadata: dict[str, Any] | None = None


def crons(orch: Orch) -> CronStore:
    return CronStore(orch.client, orch.keys)


Crons = Annotated[CronStore, Depends(crons)]


def _create(body: CronCreateBody, orch: Orch, store: CronStore, thread_id: str | None) -> dict[str, Any]:
    assistant = AssistantStore.of(orch).get(body.assistant_id)
    if thread_id is not None and not orch.meta(thread_id):
        raise NotFoundError(f"Thread with ID '{thread_id}' not found")
    payload = body.model_dump(exclude_unset=True)  # the whole request, as the reference keeps it
    return store.create(payload=payload, schedule=body.schedule,
                        assistant_id=assistant["assistant_id"], thread_id=thread_id,
                        end_time=body.end_time, metadata=body.metadata, enabled=body.enabled,
                        timezone=body.timezone, on_run_completed=body.on_run_completed)


@router.post("/runs/crons")
def create_cron(body: CronCreateBody, orch: Orch, store: Crons) -> dict[str, Any]:
    return _create(body, orch, store, None)


@router.post("/threads/{thread_id}/runs/crons")
def create_thread_cron(thread_id: str, body: CronCreateBody, orch: Orch, store: Crons) -> dict[str, Any]:
    return _create(body, orch, store, thread_id)


@router.post("/runs/crons/search")
def search_crons(body: CronSearchBody, orch: Orch, store: Crons) -> list[dict[str, Any]]:
    fields = body.model_dump()
    if body.assistant_id:
        fields["assistant_id"] = AssistantStore.of(orch).resolve_id(body.assistant_id)
    return store.search(**fields)


@router.post("/runs/crons/count")
def count_crons(body: CronCountBody, orch: Orch, store: Crons) -> int:
    fields = body.model_dump()
    if body.assistant_id:
        fields["assistant_id"] = AssistantStore.of(orch).resolve_id(body.assistant_id)
    return store.count(**fields)


@router.get("/runs/crons/{cron_id}")
def get_cron(cron_id: str, store: Crons) -> dict[str, Any]:
    return store.get(cron_id)


@router.patch("/runs/crons/{cron_id}")
def patch_cron(cron_id: str, body: CronPatchBody, orch: Orch, store: Crons) -> dict[str, Any]:
    changes = dict(body.model_extra or {})
    if changes.get("assistant_id"):
        changes["assistant_id"] = AssistantStore.of(orch).get(changes["assistant_id"])["assistant_id"]
    return store.update(cron_id, changes)


@router.delete("/runs/crons/{cron_id}", status_code=204)
def delete_cron(cron_id: str, store: Crons) -> None:
    store.delete(cron_id)
