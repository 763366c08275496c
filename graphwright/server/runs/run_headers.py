"""Request headers copied into a run's `configurable`, as `langgraph.json` asks.

`http.configurable_headers` names `include`/`exclude` patterns with `*`: none by default, and never
the credentials (`authorization`, `x-api-key`, ...), as the reference does.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

NEVER = frozenset({"authorization", "x-api-key", "x-service-key", "x-tenant-id", "cookie"})
# Keys of a run's configurable only the server sets: a request's own are dropped.
RESERVED = frozenset(
    {
        "langgraph_auth_user",
        "langgraph_auth_user_id",
        "langgraph_auth_permissions",
        "langgraph_request_id",
        "__request_start_time_ms__",
        "__after_seconds__",
        "__langsmith_project__",
        "__langsmith_example_id__",
        "__otel_traceparent__",
        "__otel_tracestate__",
        "__dd_trace_headers__",
        "__pregel_node_finished",
        "__context_provided__",
    }
)
# The headers of the request being answered: runs are created deep below the route, which
# has no reason to carry them; a context variable follows the request into its threads.
request_headers: ContextVar[Mapping[str, str] | None] = ContextVar("request_headers", default=None)
# The request's scope and when it began: its `state` holds the caller once authenticated.
request_scope: ContextVar[tuple[Scope, int] | None] = ContextVar("request_scope", default=None)


def _pattern(text: str) -> re.Pattern[str]:
    """Literals and `*` only (no regex from configuration: no ReDoS)."""
    return re.compile("(?s:" + ".*".join(re.escape(p) for p in text.lower().split("*")) + r")\Z")


def _patterns(config: Mapping[str, Any], *names: str) -> list[re.Pattern[str]]:
    found: list[Any] = next((config[n] for n in names if config.get(n)), [])
    return [_pattern(str(p)) for p in found]


def configurable_headers(
    headers: Mapping[str, str] | None, config: Mapping[str, Any] | None
) -> dict[str, str]:
    """The headers a run gets in `configurable`.

    Those an include pattern names and no exclude pattern does; with no include patterns, none.
    """
    if not headers or not config:
        return {}
    includes = _patterns(config, "includes", "include")
    excludes = _patterns(config, "excludes", "exclude")
    if not includes:
        return {}
    return {
        k: v
        for k, v in ((k.lower(), v) for k, v in headers.items())
        if k not in NEVER
        and any(p.match(k) for p in includes)
        and not any(p.match(k) for p in excludes)
    }


class RememberHeaders:
    """Keeps each HTTP request's headers in `request_headers` while it is answered."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        token = request_headers.set(
            {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers") or []}
        )
        began = request_scope.set((scope, int(time.time() * 1000)))
        try:
            await self.app(scope, receive, send)
        finally:
            request_scope.reset(began)
            request_headers.reset(token)


def request_configurable(creator: Any = None) -> dict[str, Any]:
    """What the reference puts in the `configurable` of every run a request creates.

    The caller (`None` and `""` when anonymous), its permissions, the request's id (its
    `x-request-id` or a new one) and start. Set here, never taken from the request body (RESERVED
    keys are dropped from it), so a run cannot claim another user. A cron's run has no request: its
    `creator` (the user who made the cron) is the caller, as the reference's scheduler sets it.
    """
    found = request_scope.get()
    if found is None:
        return {**_caller(creator), "langgraph_request_id": None}
    scope, began = found
    headers = {k.lower(): v for k, v in (request_headers.get() or {}).items()}
    user: Any = (scope.get("state") or {}).get("user")  # set by authentication (access.py)
    return {
        **_caller(user),
        "langgraph_request_id": headers.get("x-request-id") or str(uuid.uuid4()),
        "__request_start_time_ms__": began,
    }


def _caller(user: Any) -> dict[str, Any]:
    if not getattr(user, "is_authenticated", False):
        user = None  # anonymous: stored as None, as the reference stores it
    identity = str(user.identity) if user is not None else ""
    return {
        "langgraph_auth_user": {k: user[k] for k in user} if user is not None else None,
        "langgraph_auth_user_id": identity,
        "langgraph_auth_permissions": list(user.permissions) if user is not None else [],
        "user_id": identity,
    }
