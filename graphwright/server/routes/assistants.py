"""``/assistants``: assistants stored in Redis with their versions; each registered graph
keeps a system assistant (its id derived from the graph name, which also names it)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends

from graphwright.drawing import drawable
from graphwright.serialize import jsonable
from graphwright.server import access, graph_schemas
from graphwright.server.assistants_store import AssistantStore
from graphwright.server.cron_store import CronStore
from graphwright.server.deps import Orch
from graphwright.server.schemas_assistants import (
    AssistantCountBody,
    AssistantCreateBody,
    AssistantLatestBody,
    AssistantPatchBody,
    AssistantSearchBody,
    AssistantVersionsBody,
)
from graphwright.thread_index import Query
from graphwright_errors import NotFoundError

router = APIRouter(tags=["assistants"])


def assistants(orch: Orch) -> AssistantStore:
    return AssistantStore.of(orch)


Store = Annotated[AssistantStore, Depends(assistants)]


@router.post("/assistants")
def create_assistant(body: AssistantCreateBody, store: Store) -> dict[str, Any]:
    return store.create(**body.model_dump())


@router.post("/assistants/search")
def search_assistants(body: AssistantSearchBody, store: Store,
                      grant: access.AssistantSearch) -> list[dict[str, Any]]:
    return [a for a in store.search(**body.model_dump()) if grant.allows(a.get("metadata"))]


@router.post("/assistants/count")
def count_assistants(body: AssistantCountBody, store: Store) -> int:
    return store.count(**body.model_dump())


@router.get("/assistants/{assistant_id}")
def get_assistant(assistant_id: str, store: Store, grant: access.AssistantRead) -> dict[str, Any]:
    found = store.get(assistant_id)
    if not grant.allows(found.get("metadata")):  # hidden by an on.assistants filter: unknown
        raise NotFoundError(f"Assistant {assistant_id} not found")
    return found


@router.patch("/assistants/{assistant_id}")
def patch_assistant(assistant_id: str, body: AssistantPatchBody, store: Store) -> dict[str, Any]:
    return store.update(assistant_id, **body.model_dump())


@router.delete("/assistants/{assistant_id}", status_code=204)
def delete_assistant(assistant_id: str, store: Store, orch: Orch, delete_threads: bool = False) -> None:
    """Delete the assistant, its versions and its crons (and, if asked, its threads)."""
    deleted = store.delete(assistant_id)
    crons = CronStore(orch.client, orch.keys)
    for cron in crons.search(assistant_id=deleted, limit=10_000):
        crons.delete(cron["cron_id"])
    if delete_threads:
        for thread_id in orch.index.page(Query(metadata={"assistant_id": deleted}), 0, -1):
            if orch.meta(thread_id):
                orch.delete(thread_id)


@router.post("/assistants/{assistant_id}/versions")
def get_versions(assistant_id: str, body: AssistantVersionsBody, store: Store) -> list[dict[str, Any]]:
    return store.versions(assistant_id, **body.model_dump())


@router.post("/assistants/{assistant_id}/latest")
def set_latest(assistant_id: str, body: AssistantLatestBody, store: Store) -> dict[str, Any]:
    return store.set_latest(assistant_id, body.version)


@router.get("/assistants/{assistant_id}/graph")
def get_graph(assistant_id: str, store: Store, orch: Orch, xray: bool | int = False) -> dict[str, Any]:
    graph = orch.compiled(store.get(assistant_id)["graph_id"])
    return jsonable(drawable(graph, xray=bool(xray)).to_json())  # type: ignore[no-any-return]


@router.get("/assistants/{assistant_id}/schemas")
def get_schemas(assistant_id: str, store: Store, orch: Orch) -> dict[str, Any]:
    graph_id = store.get(assistant_id)["graph_id"]
    return {"graph_id": graph_id, **graph_schemas.schemas(orch.compiled(graph_id))}


@router.get("/assistants/{assistant_id}/subgraphs")
@router.get("/assistants/{assistant_id}/subgraphs/{namespace}")
def get_subgraphs(assistant_id: str, store: Store, orch: Orch, namespace: str | None = None,
                  recurse: bool = False) -> dict[str, Any]:
    graph = orch.compiled(store.get(assistant_id)["graph_id"])
    return graph_schemas.subgraphs(graph, namespace, recurse)
