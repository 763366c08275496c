"""An auth file written the way LangGraph's docs show: a bearer token names the user, the
owner is stamped on what they create and every read is filtered to their own."""

from __future__ import annotations

from typing import Any

from langgraph_sdk import Auth

TOKENS = {"token-alice": "alice", "token-bob": "bob"}

auth = Auth()


@auth.authenticate
async def get_current_user(authorization: str | None) -> Auth.types.MinimalUserDict:
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or token not in TOKENS:
        raise Auth.exceptions.HTTPException(status_code=401, detail="Invalid token")
    return {"identity": TOKENS[token], "permissions": ["threads:write"]}


@auth.on
async def add_owner(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> Auth.types.FilterType:
    filters = {"owner": ctx.user.identity}
    metadata = value.setdefault("metadata", {})
    metadata.update(filters)
    return filters


@auth.on.store()
async def authorize_store(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> None:
    namespace = tuple(value["namespace"])
    if not namespace or namespace[0] != ctx.user.identity:
        value["namespace"] = (ctx.user.identity, *namespace)


only_authentication = Auth()  # no `on` handler: graphwright isolates users by default


@only_authentication.authenticate
async def by_token(authorization: str | None) -> str:
    token = (authorization or "").removeprefix("Bearer ")
    if token not in TOKENS:
        raise Auth.exceptions.HTTPException(status_code=401, detail="Invalid token")
    return TOKENS[token]


forbidding = Auth()  # deletes are refused to everyone, with a 403


@forbidding.authenticate
async def anyone(authorization: str | None) -> str:
    return "someone"


@forbidding.on.threads.delete
async def no_deletes(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> bool:
    return False


@forbidding.on.assistants
async def team_assistants(
    ctx: Auth.types.AuthContext, value: dict[str, Any]
) -> Auth.types.FilterType:
    return {"team": "research"}  # no graph carries it, so none is visible
