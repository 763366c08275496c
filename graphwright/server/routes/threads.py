"""``/threads``: create, read, update, search, count, copy, prune and delete threads; their
state now or at any checkpoint, state updates and history."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from graphwright.server import state_api
from graphwright.server.deps import Orch
from graphwright.server.schemas_threads import (
    HistoryBody,
    StateAtCheckpointBody,
    StateUpdateBody,
    ThreadCountBody,
    ThreadCreateBody,
    ThreadPatchBody,
    ThreadPruneBody,
    ThreadSearchBody,
)
from graphwright.server.threads_api import Threads

router = APIRouter(tags=["threads"])


def threads(orch: Orch) -> Threads:
    return Threads(orch)


Svc = Annotated[Threads, Depends(threads)]


@router.post("/threads")
def create_thread(body: ThreadCreateBody, svc: Svc) -> dict[str, Any]:
    return svc.create(body)


@router.post("/threads/search")
def search_threads(body: ThreadSearchBody, svc: Svc) -> list[dict[str, Any]]:
    return svc.search(body)


@router.post("/threads/count")
def count_threads(body: ThreadCountBody, svc: Svc) -> int:
    return svc.count(body)


@router.post("/threads/prune")
def prune_threads(body: ThreadPruneBody, svc: Svc) -> dict[str, int]:
    return {"pruned_count": svc.prune(body.thread_ids, body.strategy)}


@router.get("/threads/{thread_id}")
def get_thread(thread_id: str, svc: Svc) -> dict[str, Any]:
    return svc.doc(thread_id)


@router.patch("/threads/{thread_id}")
def patch_thread(thread_id: str, body: ThreadPatchBody, svc: Svc) -> dict[str, Any]:
    return svc.patch(thread_id, body)


@router.delete("/threads/{thread_id}", status_code=204)
def delete_thread(thread_id: str, svc: Svc) -> None:
    svc.delete(thread_id)


@router.post("/threads/{thread_id}/copy")
def copy_thread(thread_id: str, svc: Svc) -> dict[str, Any]:
    return svc.copy(thread_id)


@router.get("/threads/{thread_id}/state")
def get_state(thread_id: str, orch: Orch, subgraphs: bool = False) -> dict[str, Any]:
    return state_api.get_state(orch, thread_id, subgraphs=subgraphs)


@router.get("/threads/{thread_id}/state/{checkpoint_id}")
def get_state_at(thread_id: str, checkpoint_id: str, orch: Orch,
                 subgraphs: bool = False) -> dict[str, Any]:
    return state_api.get_state(orch, thread_id, {"checkpoint_id": checkpoint_id}, subgraphs=subgraphs)


@router.post("/threads/{thread_id}/state/checkpoint")
def post_state_at(thread_id: str, body: StateAtCheckpointBody, orch: Orch) -> dict[str, Any]:
    checkpoint = body.checkpoint.model_dump(exclude={"thread_id"}, exclude_none=True)
    return state_api.get_state(orch, thread_id, checkpoint, subgraphs=body.subgraphs)


@router.post("/threads/{thread_id}/state")
def update_state(thread_id: str, body: StateUpdateBody, orch: Orch) -> dict[str, Any]:
    checkpoint = body.checkpoint.model_dump(exclude={"thread_id"}, exclude_none=True) \
        if body.checkpoint else {}
    if body.checkpoint_id:
        checkpoint["checkpoint_id"] = body.checkpoint_id
    return state_api.update_state(orch, thread_id, body.values, as_node=body.as_node,
                                  checkpoint=checkpoint)


@router.post("/threads/{thread_id}/history")
def post_history(thread_id: str, body: HistoryBody, orch: Orch) -> list[dict[str, Any]]:
    checkpoint = body.checkpoint.model_dump(exclude={"thread_id"}, exclude_none=True) \
        if body.checkpoint else None
    return state_api.history(orch, thread_id, limit=body.limit, before=body.before,
                             metadata=body.metadata, checkpoint=checkpoint)


@router.get("/threads/{thread_id}/history")
def get_history(thread_id: str, orch: Orch, limit: Annotated[int, Query(ge=1, le=1000)] = 10,
                before: str | None = None) -> list[dict[str, Any]]:
    return state_api.history(orch, thread_id, limit=limit, before=before)
