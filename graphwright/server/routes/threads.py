"""``/threads``: create, read, search and delete threads; their state and history."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter

from checkpoints.errors import NotFoundError
from graphwright.orchestrator import Orchestrator
from graphwright.serialize import jsonable
from graphwright.server import access
from graphwright.server.access import visible_thread
from graphwright.server.deps import Orch
from graphwright.server.runs import THREAD_STATUS, iso
from graphwright.server.schemas import (
    Checkpoint,
    HistoryRequest,
    Thread,
    ThreadCreate,
    ThreadSearch,
    ThreadStateBody,
)

router = APIRouter(tags=["threads"])


def thread_body(orch: Orchestrator, thread_id: str, *, with_values: bool = True) -> Thread:
    meta = orch.meta(thread_id)
    if not meta:
        raise NotFoundError(f"no thread {thread_id!r}")
    status = THREAD_STATUS.get(orch.status_of(meta), "idle")
    values: dict[str, Any] | None = None
    interrupts: dict[str, list[dict[str, Any]]] = {}
    if meta.get("graph") and with_values:
        snap = orch.snapshot(thread_id)
        values = jsonable(snap.values)
        for task in snap.tasks:
            if task.interrupts:
                interrupts[task.id] = [{"value": jsonable(i.value), "id": i.id} for i in task.interrupts]
    created = float(meta.get("created_at") or meta.get("updated_at") or 0)
    return Thread(thread_id=thread_id, created_at=iso(created),
                  updated_at=iso(float(meta.get("updated_at") or created)),
                  metadata=json.loads(meta.get("metadata") or "{}"), status=status,
                  values=values, interrupts=interrupts)


def state_body(thread_id: str, snap: Any) -> ThreadStateBody:
    conf = snap.config.get("configurable") or {}
    parent = (snap.parent_config or {}).get("configurable") or {}
    tasks = [{"id": t.id, "name": t.name, "error": t.error, "state": None,
              "interrupts": [{"value": jsonable(i.value), "id": i.id} for i in t.interrupts]}
             for t in snap.tasks]
    return ThreadStateBody(
        values=jsonable(snap.values), next=list(snap.next),
        checkpoint=Checkpoint(thread_id=thread_id, checkpoint_id=conf.get("checkpoint_id")),
        checkpoint_id=conf.get("checkpoint_id"), parent_checkpoint_id=parent.get("checkpoint_id"),
        metadata=jsonable(snap.metadata or {}), created_at=snap.created_at,
        parent_checkpoint=Checkpoint(thread_id=thread_id, checkpoint_id=parent["checkpoint_id"])
        if parent.get("checkpoint_id") else None,
        tasks=tasks, interrupts=[i for t in tasks for i in t["interrupts"]],
    )


@router.post("/threads", response_model=Thread)
def create_thread(body: ThreadCreate, orch: Orch, grant: access.ThreadCreate) -> Thread:
    if body.thread_id and orch.meta(body.thread_id) and body.if_exists == "do_nothing":
        visible_thread(orch, grant, body.thread_id)
        return thread_body(orch, body.thread_id)
    return thread_body(orch, orch.create_thread(body.thread_id, grant.metadata))


@router.get("/threads/{thread_id}", response_model=Thread)
def get_thread(thread_id: str, orch: Orch, grant: access.ThreadRead) -> Thread:
    visible_thread(orch, grant, thread_id)
    return thread_body(orch, thread_id)


@router.post("/threads/search", response_model=list[Thread])
def search_threads(body: ThreadSearch, orch: Orch, grant: access.ThreadSearch) -> list[Thread]:
    out = []
    for info in orch.threads():
        thread = thread_body(orch, info.thread_id, with_values=False)
        if not grant.allows(thread.metadata) or (body.status and thread.status != body.status):
            continue
        if body.metadata and any(thread.metadata.get(k) != v for k, v in body.metadata.items()):
            continue
        out.append(thread)
    return out[body.offset: body.offset + body.limit]


@router.delete("/threads/{thread_id}", status_code=204)
def delete_thread(thread_id: str, orch: Orch, grant: access.ThreadDelete) -> None:
    visible_thread(orch, grant, thread_id)
    orch.delete(thread_id)


@router.get("/threads/{thread_id}/state", response_model=ThreadStateBody)
def get_state(thread_id: str, orch: Orch, grant: access.ThreadRead) -> ThreadStateBody:
    meta = visible_thread(orch, grant, thread_id)
    if not meta.get("graph"):
        return ThreadStateBody(values={}, next=[], created_at=None,
                               checkpoint=Checkpoint(thread_id=thread_id, checkpoint_id=None))
    return state_body(thread_id, orch.snapshot(thread_id))


@router.post("/threads/{thread_id}/history", response_model=list[ThreadStateBody])
def get_history(thread_id: str, body: HistoryRequest, orch: Orch,
                grant: access.ThreadRead) -> list[ThreadStateBody]:
    if not visible_thread(orch, grant, thread_id).get("graph"):
        return []
    return [state_body(thread_id, s) for s in orch.snapshots(thread_id, body.limit)]
