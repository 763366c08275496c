"""`/store`.

LangGraph's long-term store over HTTP (items under namespaces), served by graphwright's `RedisStore`
with the Agent Server's shapes and error codes.

Each route runs the `store` auth handlers first and operates on the namespace they leave
(per-user isolation prefixes it with the caller's identity), as the Agent Server does; a
search filter a handler returns is ANDed with the caller's filter. Every namespace is the
users': graphwright keeps its own records (memories) in a store of its own.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse, PlainTextResponse
from langgraph.store.base import Item

from graphwright.server.auth import access
from graphwright.server.http.deps import Orch
from graphwright.server.schemas.store_bodies import DeleteBody, NamespacesBody, PutBody, SearchBody

router = APIRouter(tags=["store"])


def refused(namespace: list[str] | tuple[str, ...] | None) -> Response | None:
    """The reference's 422 (plain text) for a namespace label that is empty or has a period."""
    for label in namespace or ():
        if not label or "." in label:
            return PlainTextResponse(
                f"Namespace label {label!r} must be a non-empty string without periods",
                status_code=422,
            )
    return None


def item_doc(item: Item) -> dict[str, Any]:
    doc: dict[str, Any] = item.dict()
    return doc


def both(given: dict[str, Any] | None, granted: dict[str, Any] | None) -> dict[str, Any] | None:
    """The caller's filter AND the handler's, as one filter.

    None when no item can match both (the store's filters have no `$and`: a key both name must want
    the same value).
    """
    merged = dict(given or {})
    for key, wanted in (granted or {}).items():
        if key in merged and merged[key] != wanted:
            return None
        merged[key] = wanted
    return merged


@router.put("/store/items", status_code=204)
def put_item(body: PutBody, orch: Orch, grant: access.StorePut) -> Response:
    if (bad := refused(body.namespace) or refused(grant.namespace)) is not None:
        return bad
    if not grant.namespace:
        return PlainTextResponse("Namespace cannot be empty.", status_code=422)
    orch.store.put(grant.namespace, body.key, body.value, index=body.index, ttl=body.ttl)
    return Response(status_code=204)


@router.get("/store/items")
def get_item(
    orch: Orch,
    grant: access.StoreGet,
    key: str | None = None,
    namespace: str = "",
    refresh_ttl: bool | None = None,
) -> Response:
    if (bad := refused(namespace.split("."))) is not None:
        return bad
    if not key:
        return JSONResponse({"error": "Key is required"}, status_code=400)
    if (bad := refused(grant.namespace)) is not None:
        return bad
    item = orch.store.get(grant.namespace, key, refresh_ttl=refresh_ttl)
    return JSONResponse(None if item is None else item_doc(item))


@router.delete("/store/items", status_code=204)
def delete_item(body: DeleteBody, orch: Orch, grant: access.StoreDelete) -> Response:
    if (bad := refused(body.namespace) or refused(grant.namespace)) is not None:
        return bad
    orch.store.delete(grant.namespace, body.key)
    return Response(status_code=204)


@router.post("/store/items/search")
def search_items(body: SearchBody, orch: Orch, grant: access.StoreSearch) -> Response:
    if (bad := refused(body.namespace_prefix) or refused(grant.namespace)) is not None:
        return bad
    wanted = both(body.filter, grant.filters)
    try:
        found = (
            []
            if wanted is None
            else orch.store.search(
                grant.namespace,
                query=body.query,
                filter=wanted or None,
                limit=body.limit,
                offset=body.offset,
                refresh_ttl=body.refresh_ttl,
            )
        )
    except (ValueError, TypeError) as exc:  # an operator the store lacks, $gt on a string...
        return JSONResponse({"detail": f"invalid filter: {exc}"}, status_code=400)
    return JSONResponse({"items": [item_doc(i) for i in found]})


@router.post("/store/namespaces")
def list_namespaces(
    body: NamespacesBody, orch: Orch, grant: access.StoreListNamespaces
) -> Response:
    if (
        bad := refused(body.prefix) or refused(body.suffix) or refused(grant.namespace)
    ) is not None:
        return bad
    found = orch.store.list_namespaces(
        prefix=grant.namespace or None,
        suffix=tuple(body.suffix) if body.suffix else None,
        max_depth=body.max_depth,
        limit=body.limit,
        offset=body.offset,
    )
    return JSONResponse({"namespaces": [list(ns) for ns in found]})
