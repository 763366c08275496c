"""What a caller may do to a resource.

The `on` handler's verdict (allow, 403, or a filter on metadata) and the metadata it sets, plus
per-user isolation when no handler decides.

A route takes `grant: Annotated[Grant, Depends(access("threads", "read"))]` and then calls
`grant.allows(metadata)` on what it found (an invisible thing is a 404, never a 403),
`grant.metadata` on what it creates, `grant.namespace` for store operations. `authorize`
is the one decision: routes, the review pages and the cron scheduler all ask it, and
`audit` refuses to serve a route that names no action.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request
from fastapi.routing import APIRoute
from langgraph_sdk.auth import exceptions as auth_exceptions
from langgraph_sdk.auth import types as auth_types
from langgraph_sdk.auth.types import AuthContext
from pydantic import BaseModel

from graphwright.orchestrator import Orchestrator
from graphwright.server.auth.authority import Authority, User, as_http
from graphwright.server.auth.typed_body import parsed_body
from graphwright.server.offload import offload
from graphwright.server.records.assistant_store import AssistantStore
from graphwright.server.runs import webhooks
from graphwright.server.schemas.run_bodies import RunCreate
from graphwright.thread_index import matches
from graphwright_errors import ConfigurationError, ConflictError, NotFoundError

OWNER = "owner"  # the metadata key per-user isolation stamps and filters on
MEMORY_USER = "user_id"  # the metadata key naming whose memories a run recalls and keeps
STAMPED = frozenset({"create", "create_run"})  # actions whose value gets an owner
WITH_METADATA = frozenset({"create", "create_run", "search"})
READS = frozenset({"read", "search"})
SYSTEM = {"created_by": "system", OWNER: None}  # a graph's own assistant, which no user owns


def authority(request: Request) -> Authority:
    """The app's `Authority`: who callers are and what they may do."""
    found: Authority = request.app.state.authority
    return found


async def current_user(request: Request) -> User:
    """Authenticate once per request (FastAPI caches dependencies within a request)."""
    user = await authority(request).authenticate(request)
    request.state.user = user
    return user


@dataclass
class Grant:
    """The outcome of authorizing one action: who, the filter, and the (edited) value."""

    user: User
    resource: str
    action: str
    value: dict[str, Any] = field(default_factory=dict)
    filters: dict[str, Any] | None = None

    def allows(self, metadata: Mapping[str, Any] | str | None) -> bool:
        if not self.filters:
            return True
        found = json.loads(metadata) if isinstance(metadata, str) else (metadata or {})
        return matches(found, self.filters)

    @property
    def metadata(self) -> dict[str, Any]:
        """The metadata to store on create: the caller's, as the handlers left it."""
        found: dict[str, Any] = self.value.get("metadata") or {}
        return found

    @property
    def namespace(self) -> tuple[str, ...]:
        """The store namespace to operate on, as the handlers rewrote it."""
        return tuple(self.value.get("namespace") or ())


async def decide(
    request: Request, user: User, resource: str, action: str, value: dict[str, Any]
) -> Grant:
    """`authorize` with the service's authority, for a request."""
    return await authorize(authority(request), user, resource, action, value)


async def authorize(
    auth: Authority, user: User, resource: str, action: str, value: dict[str, Any]
) -> Grant:
    """The one policy point.

    The deciding handler's verdict on `value` (it may edit it), then default isolation and the
    identity stamped server-side; 403 on a deny.
    """
    _normalize(resource, action, value)
    sent = value.get("metadata", {}).get(OWNER) if isinstance(value.get("metadata"), dict) else None
    handler = auth.handler(resource, action)
    result: Any = None
    if handler is not None:
        ctx = AuthContext(  # our routes pass the Literal names
            permissions=list(user.permissions),
            user=user,
            resource=resource,  # type: ignore[arg-type]
            action=action,  # type: ignore[arg-type]
        )
        try:
            result = await handler(ctx=ctx, value=value)
        except auth_exceptions.HTTPException as exc:
            raise as_http(exc) from exc
    if result is False:
        raise HTTPException(status_code=403, detail="Forbidden")
    grant = Grant(
        user=user,
        resource=resource,
        action=action,
        value=value,
        filters=dict(result) if isinstance(result, Mapping) else None,
    )
    if auth.isolating and user.identity:
        _isolate(grant, decided=handler is not None, sent_owner=sent)
    return grant


def _normalize(resource: str, action: str, value: dict[str, Any]) -> None:
    if resource == "store":  # the SDK sends it as a list, a dotted query string, or a prefix
        ns = next((value[k] for k in STORE_NAMESPACE if k in value), None)
        value["namespace"] = (
            tuple(ns.split(".") if ns else ()) if isinstance(ns, str) else tuple(ns or ())
        )
    elif action in WITH_METADATA and not isinstance(value.get("metadata"), dict):
        value["metadata"] = {}


def _isolate(grant: Grant, *, decided: bool, sent_owner: Any) -> None:
    """Per-user isolation.

    Owner stamped on create; filtered on everything no handler decided. Assistants as threads, but
    the graphs' system assistants are read (never changed) by all.
    """
    identity = grant.user.identity
    if grant.resource == "store":
        if not decided:
            ns = grant.namespace
            grant.value["namespace"] = ns if ns[:1] == (identity,) else (identity, *ns)
        return
    if grant.action in STAMPED:
        metadata = grant.value["metadata"]
        if not decided or metadata.get(OWNER) in (None, sent_owner):
            metadata[OWNER] = identity  # the server's identity, never the owner a client wrote
        # else the handler set the owner itself: its word stands
        if grant.action == "create_run":  # memories are recalled and kept for the caller alone
            metadata[MEMORY_USER] = identity  # (a cron's runs: its creator's, set when it fires)
    if not decided:
        grant.filters = {OWNER: identity}
        if grant.resource == "assistants" and grant.action in READS:
            grant.filters = {"$or": [grant.filters, SYSTEM]}  # the graphs' own: read by all


# The keys of the value the reference gives each handler: those of `langgraph_sdk.auth.types`
# but where `langgraph dev` gives others (tests/differential/test_differential_handler_values.py).
SHAPES: dict[tuple[str, str], tuple[str, ...]] = {
    ("threads", "create"): ("thread_id", "metadata", "if_exists"),
    ("threads", "read"): ("thread_id",),
    ("threads", "delete"): ("thread_id",),
    ("threads", "update"): ("thread_id", "metadata"),
    ("threads", "search"): ("metadata", "values", "status", "limit", "offset"),
    ("threads", "create_run"): (
        "thread_id",
        "assistant_id",
        "run_id",
        "status",
        "metadata",
        "prevent_insert_if_inflight",
        "multitask_strategy",
        "if_not_exists",
        "after_seconds",
        "kwargs",
    ),
    ("assistants", "create"): ("assistant_id", "graph_id", "config", "context", "metadata", "name"),
    ("assistants", "update"): ("assistant_id", "graph_id", "config", "context", "metadata", "name"),
    ("assistants", "read"): ("assistant_id",),
    ("crons", "create"): (
        "payload",
        "schedule",
        "cron_id",
        "thread_id",
        "user_id",
        "end_time",
        "metadata",
    ),
    ("store", "put"): ("namespace", "key", "value", "index", "ttl"),
    ("store", "get"): ("namespace", "key", "refresh_ttl"),
    ("store", "search"): ("namespace", "filter", "limit", "offset", "query", "refresh_ttl"),
}
STORE_NAMESPACE = ("namespace", "namespace_prefix", "prefix")  # what each store body calls it
NAMES_AN_ASSISTANT = frozenset({("threads", "create_run"), ("crons", "create")})
ONLY_SENT = {("threads", "update"): "metadata"}  # a state update names no metadata
RUN_DEFAULTS = {"run_id": None, "status": "pending"}  # not chosen yet when the handler runs


def _keys(resource: str, action: str) -> tuple[str, ...] | None:
    """The reference's keys for the handler of `action` on `resource`."""
    if (resource, action) in SHAPES:
        return SHAPES[resource, action]
    name = f"{resource.capitalize()}{action.title().replace('_', '')}"
    typed = getattr(auth_types, name, None)
    return tuple(typed.__annotations__) if isinstance(typed, type) else None


async def request_value(request: Request, resource: str, action: str) -> dict[str, Any]:
    """The value a handler sees, built from what the route acts on.

    The body as the route's model validated it (a malformed body is the route's 422, before any
    handler runs), the query, and the path parameters last, so a body cannot name another resource
    than the path does. Shaped as the reference shapes it: a run's other fields in `kwargs`, a
    cron's run in `payload`.
    """
    body = await _validated_body(request)
    value: dict[str, Any] = {**request.query_params, **body, **request.path_params}
    if resource == "store":
        value["namespace"] = next((value[k] for k in STORE_NAMESPACE if k in value), None)
    keys = _keys(resource, action)
    if keys is None:
        return value
    kept = {k: value.get(k, RUN_DEFAULTS.get(k) if action == "create_run" else None) for k in keys}
    if (only := ONLY_SENT.get((resource, action))) is not None and only not in body:
        del kept[only]
    if "kwargs" in keys:
        kept["kwargs"] = {k: v for k, v in body.items() if k not in keys}
    if resource == "crons" and "payload" in keys:
        kept["payload"] = {k: v for k, v in body.items() if k not in keys}
    return kept


async def _validated_body(request: Request) -> dict[str, Any]:
    """The JSON body through the route's own body model; a body it refuses is the route's 422.

    `{}` without a body, or for a body that is not an object.
    """
    body = await parsed_body(request)
    if isinstance(body, BaseModel):
        return body.model_dump()
    return body if isinstance(body, dict) else {}


def access(resource: str, action: str) -> Callable[..., Awaitable[Grant]]:
    """A dependency that authorizes `action` on `resource` for this request."""

    async def dependency(request: Request, user: Annotated[User, Depends(current_user)]) -> Grant:
        value = await request_value(request, resource, action)
        grant = await decide(request, user, resource, action, value)
        if (resource, action) in NAMES_AN_ASSISTANT:
            named = value.get("assistant_id") or (value.get("payload") or {}).get("assistant_id")
            await runnable_assistant(request, user, named)
        return grant

    dependency.grants = True  # type: ignore[attr-defined]  # what `audit` looks for
    return dependency


async def runnable_assistant(request: Request, user: User, assistant_id: Any) -> None:
    """A run or cron names an assistant the caller may read.

    As the reference checks with the `assistants` read handler: a graph's own assistant is
    everyone's; another user's is a 404, as if it did not exist.
    """
    if not isinstance(assistant_id, str) or not assistant_id:
        return
    orch: Orchestrator = request.app.state.service.orch
    found = await offload(AssistantStore.of(orch).find, assistant_id)
    metadata = (found or {}).get("metadata") or {}
    if found is None or metadata.get("created_by") == "system":
        return
    grant = await decide(request, user, "assistants", "read", {"assistant_id": assistant_id})
    if not grant.allows(metadata):
        raise NotFoundError(f"Assistant {assistant_id} not found")


def audit(routes: list[Any]) -> None:
    """Refuse to serve an API route that asks for no action: it would be open to everyone."""

    def asks(dependant: Any) -> bool:
        return any(getattr(d.call, "grants", False) or asks(d) for d in dependant.dependencies)

    open_routes = sorted(
        r.path for r in routes if isinstance(r, APIRoute) and not asks(r.dependant)
    )
    if open_routes:
        raise ConfigurationError(
            f"routes {open_routes} authorize no action; give each an "
            "access(resource, action) dependency"
        )


def visible_thread(
    orch: Orchestrator, grant: Grant, thread_id: str, meta: dict[str, str] | None = None
) -> dict[str, str]:
    """The thread's stored fields (`meta` if just read).

    404 when it is missing or the grant's filter hides it.
    """
    meta = orch.meta(thread_id) if meta is None else meta
    if not meta or not grant.allows(meta.get("metadata")):
        raise NotFoundError(f"Thread with ID {thread_id} not found")
    return meta


def creatable_thread(orch: Orchestrator, grant: Grant, thread_id: str | None) -> None:
    """409 for an id another user's thread holds (as the reference: the id is taken)."""
    if thread_id and (meta := orch.meta(thread_id)) and not grant.allows(meta.get("metadata")):
        raise ConflictError(f"Thread with ID {thread_id} already exists")


def admit_run(
    orch: Orchestrator, grant: Grant, thread_id: str | None, body: RunCreate
) -> dict[str, str] | None:
    """A new run on a thread the caller may see (or a new thread), with the granted metadata.

    Returns the thread's meta as read for the check (None for a stateless run).
    """
    meta = orch.meta(thread_id) if thread_id is not None else None
    if thread_id is not None and meta:
        visible_thread(orch, grant, thread_id, meta)
    if body.webhook:
        webhooks.admit(body.webhook, orch.settings.webhook_allow)
    if grant.metadata:
        body.metadata = {**(body.metadata or {}), **grant.metadata}
    return meta


# One alias per (resource, action) the LangGraph API authorizes; a route takes the one it needs.
ThreadCreate = Annotated[Grant, Depends(access("threads", "create"))]
ThreadRead = Annotated[Grant, Depends(access("threads", "read"))]
ThreadUpdate = Annotated[Grant, Depends(access("threads", "update"))]
ThreadDelete = Annotated[Grant, Depends(access("threads", "delete"))]
ThreadSearch = Annotated[Grant, Depends(access("threads", "search"))]
RunStart = Annotated[Grant, Depends(access("threads", "create_run"))]
AssistantCreate = Annotated[Grant, Depends(access("assistants", "create"))]
AssistantRead = Annotated[Grant, Depends(access("assistants", "read"))]
AssistantUpdate = Annotated[Grant, Depends(access("assistants", "update"))]
AssistantDelete = Annotated[Grant, Depends(access("assistants", "delete"))]
AssistantSearch = Annotated[Grant, Depends(access("assistants", "search"))]
CronCreate = Annotated[Grant, Depends(access("crons", "create"))]
CronRead = Annotated[Grant, Depends(access("crons", "read"))]
CronUpdate = Annotated[Grant, Depends(access("crons", "update"))]
CronDelete = Annotated[Grant, Depends(access("crons", "delete"))]
CronSearch = Annotated[Grant, Depends(access("crons", "search"))]
StorePut = Annotated[Grant, Depends(access("store", "put"))]
StoreGet = Annotated[Grant, Depends(access("store", "get"))]
StoreDelete = Annotated[Grant, Depends(access("store", "delete"))]
StoreSearch = Annotated[Grant, Depends(access("store", "search"))]
StoreListNamespaces = Annotated[Grant, Depends(access("store", "list_namespaces"))]
