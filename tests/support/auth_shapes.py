"""An `Auth` that allows everything and records, per `resource.action`, the keys of the
value each handler is shown (and its `thread_id`), one JSON line each, in the file named
by `GW_AUTH_SHAPES`: the same file on graphwright and on the reference tells whether a
handler sees the same shape on both."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from langgraph_sdk import Auth

auth = Auth()


@auth.authenticate
async def anyone(authorization: str | None) -> str:
    return "alice"


def _note(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> None:
    line = {
        "what": f"{ctx.resource}.{ctx.action}",
        "keys": sorted(value),
        "thread_id": str(value["thread_id"]) if value.get("thread_id") else None,
    }
    with Path(os.environ["GW_AUTH_SHAPES"]).open("a") as seen:
        seen.write(json.dumps(line) + "\n")


@auth.on
async def everything(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> bool:
    _note(ctx, value)
    return True


@auth.on.store()
async def store(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> bool:
    _note(ctx, value)
    return True
