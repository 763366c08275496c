"""Three users for authorization tests, written the way LangGraph's docs show: two owners
(alice, bob) who see only their own threads, crons, assistants and store items, and a
read-only viewer whom every write refuses (403). `contains_auth` shares a thread with the
users its `readers` list names (a `$contains` filter)."""

from __future__ import annotations

from typing import Any

from langgraph_sdk import Auth

TOKENS = {
    "token-alice": "alice",
    "token-bob": "bob",
    "token-viewer": "viewer",
    "token-memories": "memories",
}
WRITERS = frozenset({"alice", "bob", "memories"})
READS = frozenset({"read", "search", "get", "list_namespaces"})
REVOKED: set[str] = set()  # users whose new runs the handlers refuse from now on

auth = Auth()


@auth.authenticate
async def by_token(authorization: str | None) -> Auth.types.MinimalUserDict:
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or token not in TOKENS:
        raise Auth.exceptions.HTTPException(status_code=401, detail="Invalid token")
    identity = TOKENS[token]
    return {
        "identity": identity,
        "permissions": ["read", "write"] if identity in WRITERS else ["read"],
    }


def _writer(ctx: Auth.types.AuthContext) -> bool:
    return "write" in ctx.user.permissions


@auth.on
async def owned(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> Auth.types.FilterType | bool:
    """Threads, runs and crons: the owner's; the viewer reads everything and writes nothing."""
    if not _writer(ctx):
        return ctx.action in READS
    if ctx.action == "create_run" and ctx.user.identity in REVOKED:
        return False
    filters = {"owner": ctx.user.identity}
    if isinstance(value.get("metadata"), dict):
        value["metadata"].update(filters)
    return filters


@auth.on.assistants
async def assistants(
    ctx: Auth.types.AuthContext, value: dict[str, Any]
) -> Auth.types.FilterType | bool:
    """Everyone reads every assistant; writers create theirs and change only their own."""
    if ctx.action in READS:
        return True
    if not _writer(ctx):
        return False
    if ctx.action == "create":
        value.setdefault("metadata", {})["owner"] = ctx.user.identity
        return True
    return {"owner": ctx.user.identity}


@auth.on.store()
async def store(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> bool:
    """Each user's items under their own identity; the viewer reads their own, writes none."""
    if not _writer(ctx) and ctx.action not in READS:
        return False
    namespace = tuple(value["namespace"])
    if not namespace or namespace[0] != ctx.user.identity:
        value["namespace"] = (ctx.user.identity, *namespace)
    return True


contains_auth = Auth()  # a thread is visible to the users its `readers` list names


@contains_auth.authenticate
async def reader(authorization: str | None) -> str:
    token = (authorization or "").removeprefix("Bearer ")
    if token not in TOKENS:
        raise Auth.exceptions.HTTPException(status_code=401, detail="Invalid token")
    return TOKENS[token]


@contains_auth.on.threads
async def readers(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> Auth.types.FilterType:
    if ctx.action in ("create", "create_run") and isinstance(value.get("metadata"), dict):
        value["metadata"]["readers"] = [ctx.user.identity]
    return {"readers": {"$contains": ctx.user.identity}}


create_only = Auth()  # a handler for thread creation alone: isolation decides the rest


@create_only.authenticate
async def by_bearer(authorization: str | None) -> str:
    return await reader(authorization)


@create_only.on.threads.create
async def any_create(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> None:
    return None  # allows, and leaves the metadata as the client sent it
