"""What a caller may do to a resource: the ``on`` handler's verdict (allow, 403, or a filter
on metadata) and the metadata it sets, plus per-user isolation when no handler decides.

A route takes ``grant: Annotated[Grant, Depends(access("threads", "read"))]`` and then calls
``grant.allows(metadata)`` on what it found (an invisible thing is a 404, never a 403),
``grant.metadata`` on what it creates, ``grant.namespace`` for store operations. ``authorize``
is the one decision: routes, the review pages and the cron scheduler all ask it, and
``audit`` refuses to serve a route that names no action.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request
from fastapi.routing import APIRoute
from langgraph_sdk.auth import exceptions as auth_exceptions
from langgraph_sdk.auth.types import AuthContext

from graphwright.orchestrator import Orchestrator
from graphwright.server import webhooks
from graphwright.server.auth import Authority, User, as_http
from graphwright.server.schemas import RunCreate
from graphwright.thread_index import matches
from graphwright_errors import ConfigurationError, ConflictError, NotFoundError

OWNER = "owner"  # the metadata key per-user isolation stamps and filters on
MEMORY_USER = "user_id"  # the metadata key naming whose memories a run recalls and keeps
STAMPED = frozenset({"create", "create_run"})  # actions whose value gets an owner
WITH_METADATA = frozenset({"create", "create_run", "update", "search"})


def authority(request: Request) -> Authority:
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


async def decide(request: Request, user: User, resource: str, action: str,
                 value: dict[str, Any]) -> Grant:
    """``authorize`` with the service's authority, for a request."""
    return await authorize(authority(request), user, resource, action, value)


async def authorize(auth: Authority, user: User, resource: str, action: str,
                    value: dict[str, Any]) -> Grant:
    """The one policy point: the deciding handler's verdict on ``value`` (it may edit it),
    then default isolation and the identity stamped server-side; 403 on a deny."""
    _normalize(resource, action, value)
    sent = value.get("metadata", {}).get(OWNER) if isinstance(value.get("metadata"), dict) else None
    handler = auth.handler(resource, action)
    result: Any = None
    if handler is not None:
        ctx = AuthContext(permissions=list(user.permissions), user=user,
                          resource=resource, action=action)  # type: ignore[arg-type]  # our routes pass the Literal names
        try:
            result = await handler(ctx=ctx, value=value)
        except auth_exceptions.HTTPException as exc:
            raise as_http(exc) from exc
    if result is False:
        raise HTTPException(status_code=403, detail="Forbidden")
    grant = Grant(user=user, resource=resource, action=action, value=value,
                  filters=dict(result) if isinstance(result, Mapping) else None)
    if auth.isolating and user.identity:
        _isolate(grant, decided=handler is not None, sent_owner=sent)
    return grant


def _normalize(resource: str, action: str, value: dict[str, Any]) -> None:
    if resource == "store":  # the SDK sends it as a list, a dotted query string, or a prefix
        ns = value.get("namespace", value.get("namespace_prefix", value.get("prefix")))
        value["namespace"] = tuple(ns.split(".") if ns else ()) if isinstance(ns, str) else \
            tuple(ns or ())
    elif action in WITH_METADATA and not isinstance(value.get("metadata"), dict):
        value["metadata"] = {}


def _isolate(grant: Grant, *, decided: bool, sent_owner: Any) -> None:
    """Per-user isolation: owner stamped on create; filtered on everything no handler decided."""
    identity = grant.user.identity
    if grant.resource == "assistants":
        return  # assistants are the project's graphs, shared by every user
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


async def request_value(request: Request) -> dict[str, Any]:
    """The value a handler sees: path parameters, then query parameters, then the JSON body."""
    value: dict[str, Any] = {**request.query_params, **request.path_params}
    if request.method in ("POST", "PUT", "PATCH", "DELETE") and await request.body():
        try:
            body = await request.json()
        except ValueError:
            body = None  # FastAPI answers the malformed body with its own 422
        if isinstance(body, dict):
            value.update(body)
    return value


def access(resource: str, action: str) -> Callable[..., Awaitable[Grant]]:
    """A dependency that authorizes ``action`` on ``resource`` for this request."""

    async def dependency(request: Request,
                         user: Annotated[User, Depends(current_user)]) -> Grant:
        return await decide(request, user, resource, action, await request_value(request))

    dependency.grants = True  # type: ignore[attr-defined]  # what ``audit`` looks for
    return dependency


def audit(routes: list[Any]) -> None:
    """Refuse to serve an API route that asks for no action: it would be open to everyone."""

    def asks(dependant: Any) -> bool:
        return any(getattr(d.call, "grants", False) or asks(d) for d in dependant.dependencies)

    open_routes = sorted(r.path for r in routes
                         if isinstance(r, APIRoute) and not asks(r.dependant))
    if open_routes:
        raise ConfigurationError(f"routes {open_routes} authorize no action; give each an "
                                 "access(resource, action) dependency")


def visible_thread(orch: Orchestrator, grant: Grant, thread_id: str,
                   meta: dict[str, str] | None = None) -> dict[str, str]:
    """The thread's stored fields (``meta`` if just read), or 404 when it is missing or the
    grant's filter hides it."""
    meta = orch.meta(thread_id) if meta is None else meta
    if not meta or not grant.allows(meta.get("metadata")):
        raise NotFoundError(f"Thread with ID {thread_id} not found")
    return meta


def creatable_thread(orch: Orchestrator, grant: Grant, thread_id: str | None) -> None:
    """409 for an id another user's thread holds (as the reference: the id is taken)."""
    if thread_id and (meta := orch.meta(thread_id)) and not grant.allows(meta.get("metadata")):
        raise ConflictError(f"Thread with ID {thread_id} already exists")


def admit_run(orch: Orchestrator, grant: Grant, thread_id: str | None,
              body: RunCreate) -> dict[str, str] | None:
    """A new run on a thread the caller may see (or a new thread), with the granted metadata;
    returns the thread's meta as read for the check (None for a stateless run)."""
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
