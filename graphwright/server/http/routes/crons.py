"""`/runs/crons`.

Schedules that start runs, on one thread or on a new thread each time. The workers' schedulers start
the runs (`cron_scheduler`); this router keeps the crons.

As in the Agent Server, the `crons` auth handlers set the metadata a new cron carries
(per-user isolation stamps its owner) and filter every read, search, change and delete on
it: a cron the filter hides is a 404, exactly like one that does not exist.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends

from graphwright.orchestrator import Orchestrator
from graphwright.server.auth import access
from graphwright.server.auth.access import MEMORY_USER, OWNER, Grant, visible_thread
from graphwright.server.errors import UnprocessableError
from graphwright.server.http.deps import Orch
from graphwright.server.http.request_limits import RateLimited
from graphwright.server.records.assistant_store import AssistantStore
from graphwright.server.records.cron_store import CronStore
from graphwright.server.runs import webhooks
from graphwright.server.schemas.cron_bodies import (
    CronCountBody,
    CronCreateBody,
    CronPatchBody,
    CronSearchBody,
)
from graphwright_errors import NotFoundError

router = APIRouter(tags=["crons"])


async def crons(orch: Orch) -> CronStore:
    return CronStore(orch.client, orch.keys)


Crons = Annotated[CronStore, Depends(crons)]


def _create(
    body: CronCreateBody, orch: Orch, store: CronStore, thread_id: str | None, grant: Grant
) -> dict[str, Any]:
    assistant = AssistantStore.of(orch).get(body.assistant_id)
    if thread_id is not None and not orch.meta(thread_id):
        raise NotFoundError(f"Thread with ID '{thread_id}' not found")
    metadata = {**(body.metadata or {}), **grant.metadata} if grant.metadata else body.metadata
    payload = body.model_dump(exclude_unset=True)  # the whole request, as the reference keeps it
    admit_webhook(orch, payload.get("webhook"))
    if metadata is not None:
        payload["metadata"] = metadata
    return store.create(
        payload=payload,
        schedule=body.schedule,
        assistant_id=assistant["assistant_id"],
        thread_id=thread_id,
        end_time=body.end_time,
        metadata=metadata,
        enabled=body.enabled,
        timezone=body.timezone,
        on_run_completed=body.on_run_completed,
        user_id=grant.user.identity,
        user_permissions=grant.user.permissions,
    )


def admit_webhook(orch: Orchestrator, url: Any) -> None:
    """A cron's webhook is checked when it is stored, as a run's is (and again when called)."""
    if url is None:
        return
    if not isinstance(url, str):
        raise UnprocessableError("a cron's webhook must be a URL string")
    webhooks.admit(url, orch.settings.webhook_allow)


def visible_cron(store: CronStore, grant: Grant, cron_id: str) -> dict[str, Any]:
    """The cron, or the 404 a missing one gets when the grant's filter hides it."""
    doc = store.get(cron_id)
    if not grant.allows(doc.get("metadata")):
        raise NotFoundError(f"Cron with ID {cron_id} not found")
    return doc


@router.post("/runs/crons", dependencies=RateLimited)
def create_cron(
    body: CronCreateBody, orch: Orch, store: Crons, grant: access.CronCreate
) -> dict[str, Any]:
    return _create(body, orch, store, None, grant)


@router.post("/threads/{thread_id}/runs/crons", dependencies=RateLimited)
def create_thread_cron(
    thread_id: str,
    body: CronCreateBody,
    orch: Orch,
    store: Crons,
    grant: access.CronCreate,
    thread: access.ThreadRead,
) -> dict[str, Any]:
    if orch.meta(thread_id):
        visible_thread(orch, thread, thread_id)  # another user's thread is not found
    return _create(body, orch, store, thread_id, grant)


@router.post("/runs/crons/search")
def search_crons(
    body: CronSearchBody, orch: Orch, store: Crons, grant: access.CronSearch
) -> list[dict[str, Any]]:
    fields = body.model_dump()
    if body.assistant_id:
        fields["assistant_id"] = AssistantStore.of(orch).resolve_id(body.assistant_id)
    return store.search(**fields, allows=grant.allows)


@router.post("/runs/crons/count")
def count_crons(body: CronCountBody, orch: Orch, store: Crons, grant: access.CronSearch) -> int:
    fields = body.model_dump()
    if body.assistant_id:
        fields["assistant_id"] = AssistantStore.of(orch).resolve_id(body.assistant_id)
    return store.count(**fields, allows=grant.allows)


@router.get("/runs/crons/{cron_id}")
def get_cron(cron_id: str, store: Crons, grant: access.CronRead) -> dict[str, Any]:
    return visible_cron(store, grant, cron_id)


@router.patch("/runs/crons/{cron_id}")
def patch_cron(
    cron_id: str, body: CronPatchBody, orch: Orch, store: Crons, grant: access.CronUpdate
) -> dict[str, Any]:
    doc = visible_cron(store, grant, cron_id)
    changes = body.model_dump(exclude_unset=True)  # what the caller sent, and only that
    admit_webhook(orch, changes.get("webhook"))
    if changes.get("assistant_id"):
        changes["assistant_id"] = AssistantStore.of(orch).get(changes["assistant_id"])[
            "assistant_id"
        ]
    if isinstance(changes.get("metadata"), dict):  # the owner and memory user stay theirs
        pinned = {*(grant.filters or {}), OWNER, MEMORY_USER}
        kept = {k: v for k, v in (doc.get("metadata") or {}).items() if k in pinned}
        changes["metadata"] = {**changes["metadata"], **kept}
    return store.update(cron_id, changes)


@router.delete("/runs/crons/{cron_id}", status_code=204)
def delete_cron(cron_id: str, store: Crons, grant: access.CronDelete) -> None:
    visible_cron(store, grant, cron_id)
    store.delete(cron_id)
