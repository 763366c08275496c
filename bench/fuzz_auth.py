"""The `Auth` the fuzzer runs under (`python -m bench.fuzz --auth`).

One bearer token, owners stamped and filtered on threads, runs and crons, store items under the
identity.
"""

from __future__ import annotations

from typing import Any

from langgraph_sdk import Auth

TOKEN = "fuzz-token-5c1a"

auth = Auth()


@auth.authenticate
async def by_token(authorization: str | None) -> Auth.types.MinimalUserDict:
    if authorization != f"Bearer {TOKEN}":
        raise Auth.exceptions.HTTPException(status_code=401, detail="Invalid token")
    return {"identity": "fuzzer", "permissions": ["read", "write"]}


@auth.on
async def owned(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> Auth.types.FilterType:
    filters = {"owner": ctx.user.identity}
    if isinstance(value.get("metadata"), dict):
        value["metadata"].update(filters)
    return filters


@auth.on.assistants
async def shared(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> None:
    return None  # every assistant is everyone's


@auth.on.store()
async def own_namespace(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> None:
    namespace = tuple(value["namespace"])
    if namespace[:1] != (ctx.user.identity,):
        value["namespace"] = (ctx.user.identity, *namespace)
