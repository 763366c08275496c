"""`/assistants`.

Assistants stored in Redis with their versions; each registered graph keeps a system assistant (its
id derived from the graph name, which also names it).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Request

from graphwright.drawing import drawable
from graphwright.orchestrator import Orchestrator
from graphwright.serialize import jsonable
from graphwright.server.auth import access
from graphwright.server.auth.access import Grant
from graphwright.server.http.deps import Orch
from graphwright.server.offload import offload
from graphwright.server.records.assistant_store import AssistantStore
from graphwright.server.records.cron_store import CronStore
from graphwright.server.runs import graph_schemas
from graphwright.server.schemas.assistant_bodies import (
    AssistantCountBody,
    AssistantCreateBody,
    AssistantLatestBody,
    AssistantPatchBody,
    AssistantSearchBody,
    AssistantVersionsBody,
)
from graphwright.thread_index import Query
from graphwright_errors import ConflictError, NotFoundError

router = APIRouter(tags=["assistants"])


async def assistants(orch: Orch) -> AssistantStore:
    return AssistantStore.of(orch)


Store = Annotated[AssistantStore, Depends(assistants)]


def visible(store: AssistantStore, grant: Grant, assistant_id: str) -> dict[str, Any]:
    """The assistant, or the 404 of an unknown one when the grant's filter hides it."""
    found = store.get(assistant_id)
    if not grant.allows(found.get("metadata")):
        raise NotFoundError(f"Assistant {assistant_id} not found")
    return found


@router.post("/assistants")
def create_assistant(
    body: AssistantCreateBody, store: Store, grant: access.AssistantCreate
) -> dict[str, Any]:
    if (
        body.assistant_id
        and (found := store.find(body.assistant_id)) is not None
        and not grant.allows(found.get("metadata"))
    ):
        raise ConflictError(f"Assistant {body.assistant_id} already exists")  # as the reference
    fields = body.model_dump()
    if grant.metadata:  # what the handlers left
        fields["metadata"] = {**(body.metadata or {}), **grant.metadata}
    return store.create(**fields)


@router.post("/assistants/search")
def search_assistants(
    body: AssistantSearchBody, store: Store, grant: access.AssistantSearch
) -> list[dict[str, Any]]:
    return store.search(**body.model_dump(), allows=grant.allows)


@router.post("/assistants/count")
def count_assistants(body: AssistantCountBody, store: Store, grant: access.AssistantSearch) -> int:
    return store.count(**body.model_dump(), allows=grant.allows)


@router.get("/assistants/{assistant_id}")
def get_assistant(assistant_id: str, store: Store, grant: access.AssistantRead) -> dict[str, Any]:
    return visible(store, grant, assistant_id)


@router.patch("/assistants/{assistant_id}")
def patch_assistant(
    assistant_id: str, body: AssistantPatchBody, store: Store, grant: access.AssistantUpdate
) -> dict[str, Any]:
    visible(store, grant, assistant_id)
    fields = body.model_dump()
    if body.metadata is not None and grant.metadata:
        fields["metadata"] = {**body.metadata, **grant.metadata}
    return store.update(assistant_id, **fields)


@router.delete("/assistants/{assistant_id}", status_code=204)
async def delete_assistant(
    assistant_id: str,
    request: Request,
    store: Store,
    orch: Orch,
    grant: access.AssistantDelete,
    delete_threads: bool = False,
) -> None:
    """Delete the assistant, its versions and those of its crons the caller may delete.

    And, if asked, those of its threads the caller may delete. The others are left, as the reference
    skips them: another user's cron on it then fails when it fires.
    """
    await offload(visible, store, grant, assistant_id)
    crons = await _may(request, grant, "crons")
    threads: Grant | None = None
    if delete_threads:
        threads = await _may(request, grant, "threads")
    await offload(_delete, store, orch, assistant_id, crons, threads)


async def _may(request: Request, grant: Grant, resource: str) -> Grant | None:
    """The caller's grant to delete `resource` things; None when every delete is refused."""
    key = "cron_id" if resource == "crons" else "thread_id"
    try:
        return await access.decide(request, grant.user, resource, "delete", {key: None})
    except HTTPException as exc:
        if exc.status_code == 403:
            return None
        raise


def _delete(
    store: AssistantStore,
    orch: Orchestrator,
    assistant_id: str,
    crons: Grant | None,
    threads: Grant | None,
) -> None:
    deleted = store.delete(assistant_id)
    cron_store = CronStore(orch.client, orch.keys)
    if crons is not None:
        for cron in cron_store.search(assistant_id=deleted, limit=10_000, allows=crons.allows):
            cron_store.delete(cron["cron_id"])
    if threads is None:
        return
    for thread_id in orch.index.page(Query(metadata={"assistant_id": deleted}), 0, -1):
        meta = orch.meta(thread_id)
        if meta and threads.allows(meta.get("metadata")):
            orch.delete(thread_id)


@router.post("/assistants/{assistant_id}/versions")
def get_versions(
    assistant_id: str, body: AssistantVersionsBody, store: Store, grant: access.AssistantRead
) -> list[dict[str, Any]]:
    visible(store, grant, assistant_id)
    return store.versions(assistant_id, **body.model_dump(), allows=grant.allows)


@router.post("/assistants/{assistant_id}/latest")
def set_latest(
    assistant_id: str, body: AssistantLatestBody, store: Store, grant: access.AssistantUpdate
) -> dict[str, Any]:
    visible(store, grant, assistant_id)
    return store.set_latest(assistant_id, body.version)


@router.get("/assistants/{assistant_id}/graph")
def get_graph(
    assistant_id: str,
    store: Store,
    orch: Orch,
    grant: access.AssistantRead,
    xray: bool | int = False,
) -> dict[str, Any]:
    graph = orch.compiled(visible(store, grant, assistant_id)["graph_id"])
    return jsonable(drawable(graph, xray=bool(xray)).to_json())  # type: ignore[no-any-return]


@router.get("/assistants/{assistant_id}/schemas")
def get_schemas(
    assistant_id: str, store: Store, orch: Orch, grant: access.AssistantRead
) -> dict[str, Any]:
    graph_id = visible(store, grant, assistant_id)["graph_id"]
    return {"graph_id": graph_id, **graph_schemas.schemas(orch.compiled(graph_id))}


@router.get("/assistants/{assistant_id}/subgraphs")
@router.get("/assistants/{assistant_id}/subgraphs/{namespace}")
def get_subgraphs(
    assistant_id: str,
    store: Store,
    orch: Orch,
    grant: access.AssistantRead,
    namespace: str | None = None,
    recurse: bool = False,
) -> dict[str, Any]:
    graph = orch.compiled(visible(store, grant, assistant_id)["graph_id"])
    return graph_schemas.subgraphs(graph, namespace, recurse)
