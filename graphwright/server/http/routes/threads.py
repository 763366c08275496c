"""`/threads`.

Create, read, update, search, count, copy, prune and delete threads; their state now or at any
checkpoint, state updates and history.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from graphwright.orchestrator import Orchestrator
from graphwright.server.auth import access
from graphwright.server.auth.access import creatable_thread, visible_thread
from graphwright.server.http.deps import Orch
from graphwright.server.offload import offload
from graphwright.server.records import thread_state
from graphwright.server.records.thread_store import Threads
from graphwright.server.schemas.thread_bodies import (
    HistoryBody,
    StateAtCheckpointBody,
    StateUpdateBody,
    ThreadCountBody,
    ThreadCreateBody,
    ThreadPatchBody,
    ThreadPruneBody,
    ThreadSearchBody,
)
from graphwright_errors import ConflictError, NotFoundError

router = APIRouter(tags=["threads"])


async def threads(orch: Orch) -> Threads:
    return Threads(orch)


Svc = Annotated[Threads, Depends(threads)]


@router.post("/threads")
async def create_thread(
    body: ThreadCreateBody, svc: Svc, orch: Orch, grant: access.ThreadCreate
) -> dict[str, Any]:
    return await offload(_create_thread, body, svc, orch, grant)


def _create_thread(
    body: ThreadCreateBody, svc: Threads, orch: Orchestrator, grant: access.Grant
) -> dict[str, Any]:
    creatable_thread(orch, grant, body.thread_id)
    if grant.metadata:  # the handlers' (and isolation's) word over the client's
        body = body.model_copy(update={"metadata": {**(body.metadata or {}), **grant.metadata}})
    doc = svc.create(body)
    if body.if_exists == "do_nothing" and not grant.allows(doc.get("metadata")):
        # another user's thread took the id between the check and the create
        raise ConflictError(f"Thread with ID {body.thread_id} already exists")
    return doc


@router.post("/threads/search")
def search_threads(
    body: ThreadSearchBody, svc: Svc, grant: access.ThreadSearch
) -> list[dict[str, Any]]:
    return svc.search(body, grant.filters)


@router.post("/threads/count")
def count_threads(body: ThreadCountBody, svc: Svc, grant: access.ThreadSearch) -> int:
    return svc.count(body, grant.filters)


@router.post("/threads/prune")
def prune_threads(
    body: ThreadPruneBody, svc: Svc, orch: Orch, grant: access.ThreadDelete
) -> dict[str, int]:
    """Under a filter every id must be the caller's (else 404, as the reference).

    Without one, unknown ids are skipped.
    """
    if grant.filters:
        for thread_id in body.thread_ids:
            meta = orch.meta(thread_id)
            if not meta or not grant.allows(meta.get("metadata")):
                raise NotFoundError("At least one thread not found or not authorized")
    return {"pruned_count": svc.prune(body.thread_ids, body.strategy)}


@router.get("/threads/{thread_id}")
def get_thread(thread_id: str, svc: Svc, orch: Orch, grant: access.ThreadRead) -> dict[str, Any]:
    visible_thread(orch, grant, thread_id)
    return svc.doc(thread_id)


@router.patch("/threads/{thread_id}")
def patch_thread(
    thread_id: str, body: ThreadPatchBody, svc: Svc, orch: Orch, grant: access.ThreadUpdate
) -> dict[str, Any]:
    meta = visible_thread(orch, grant, thread_id)
    if body.metadata and grant.filters:  # what makes it the caller's stays as it is
        had = json.loads(meta.get("metadata") or "{}")
        kept = {k: had[k] for k in grant.filters if k in had}
        body = body.model_copy(update={"metadata": {**body.metadata, **kept}})
    return svc.patch(thread_id, body)


@router.delete("/threads/{thread_id}", status_code=204)
def delete_thread(thread_id: str, svc: Svc, orch: Orch, grant: access.ThreadDelete) -> None:
    visible_thread(orch, grant, thread_id)
    svc.delete(thread_id)


@router.post("/threads/{thread_id}/copy")
def copy_thread(
    thread_id: str, svc: Svc, orch: Orch, grant: access.ThreadRead, creating: access.ThreadCreate
) -> dict[str, Any]:
    """A copy needs both: reading the thread and creating one (as the reference asks)."""
    visible_thread(orch, grant, thread_id)
    return svc.copy(thread_id)


@router.get("/threads/{thread_id}/state")
def get_state(
    thread_id: str, orch: Orch, grant: access.ThreadRead, subgraphs: bool = False
) -> dict[str, Any]:
    visible_thread(orch, grant, thread_id)
    return thread_state.get_state(orch, thread_id, subgraphs=subgraphs)


@router.get("/threads/{thread_id}/state/{checkpoint_id}")
def get_state_at(
    thread_id: str,
    checkpoint_id: str,
    orch: Orch,
    grant: access.ThreadRead,
    subgraphs: bool = False,
) -> dict[str, Any]:
    visible_thread(orch, grant, thread_id)
    return thread_state.get_state(
        orch, thread_id, {"checkpoint_id": checkpoint_id}, subgraphs=subgraphs
    )


@router.post("/threads/{thread_id}/state/checkpoint")
def post_state_at(
    thread_id: str, body: StateAtCheckpointBody, orch: Orch, grant: access.ThreadRead
) -> dict[str, Any]:
    visible_thread(orch, grant, thread_id)
    checkpoint = body.checkpoint.model_dump(exclude={"thread_id"}, exclude_none=True)
    return thread_state.get_state(orch, thread_id, checkpoint, subgraphs=body.subgraphs)


@router.post("/threads/{thread_id}/state")
def update_state(
    thread_id: str, body: StateUpdateBody, orch: Orch, grant: access.ThreadUpdate
) -> dict[str, Any]:
    visible_thread(orch, grant, thread_id)
    checkpoint = (
        body.checkpoint.model_dump(exclude={"thread_id"}, exclude_none=True)
        if body.checkpoint
        else {}
    )
    if body.checkpoint_id:
        checkpoint["checkpoint_id"] = body.checkpoint_id
    return thread_state.update_state(
        orch, thread_id, body.values, as_node=body.as_node, checkpoint=checkpoint
    )


@router.post("/threads/{thread_id}/history")
def post_history(
    thread_id: str, body: HistoryBody, orch: Orch, grant: access.ThreadRead
) -> list[dict[str, Any]]:
    visible_thread(orch, grant, thread_id)
    checkpoint = (
        body.checkpoint.model_dump(exclude={"thread_id"}, exclude_none=True)
        if body.checkpoint
        else None
    )
    return thread_state.history(
        orch,
        thread_id,
        limit=body.limit,
        before=body.before,
        metadata=body.metadata,
        checkpoint=checkpoint,
    )


@router.get("/threads/{thread_id}/history")
def get_history(
    thread_id: str,
    orch: Orch,
    grant: access.ThreadRead,
    limit: Annotated[int, Query(ge=1, le=1000)] = 10,
    before: str | None = None,
) -> list[dict[str, Any]]:
    visible_thread(orch, grant, thread_id)
    return thread_state.history(orch, thread_id, limit=limit, before=before)
