"""Request headers copied into a run's ``configurable``, as ``http.configurable_headers`` in
``langgraph.json`` asks (``include``/``exclude`` patterns with ``*``): none by default, and
never the credentials (``authorization``, ``x-api-key``, ...), as the reference does."""

from __future__ import annotations

import re
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

NEVER = frozenset({"authorization", "x-api-key", "x-service-key", "x-tenant-id", "cookie"})
# The headers of the request being answered: runs are created deep below the route, which
# has no reason to carry them; a context variable follows the request into its threads.
request_headers: ContextVar[Mapping[str, str] | None] = ContextVar("request_headers", default=None)


def _pattern(text: str) -> re.Pattern[str]:
    """Literals and ``*`` only (no regex from configuration: no ReDoS)."""
    return re.compile("(?s:" + ".*".join(re.escape(p) for p in text.lower().split("*")) + r")\Z")


def _patterns(config: Mapping[str, Any], *names: str) -> list[re.Pattern[str]]:
    found: list[Any] = next((config[n] for n in names if config.get(n)), [])
    return [_pattern(str(p)) for p in found]


def configurable_headers(headers: Mapping[str, str] | None,
                         config: Mapping[str, Any] | None) -> dict[str, str]:
    """The headers a run gets in ``configurable``: those an include pattern names and no
    exclude pattern does; with no include patterns, none."""
    if not headers or not config:
        return {}
    includes = _patterns(config, "includes", "include")
    excludes = _patterns(config, "excludes", "exclude")
    if not includes:
        return {}
    return {k: v for k, v in ((k.lower(), v) for k, v in headers.items())
            if k not in NEVER and any(p.match(k) for p in includes)
            and not any(p.match(k) for p in excludes)}


class RememberHeaders:
    """Keeps each HTTP request's headers in ``request_headers`` while it is answered."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        token = request_headers.set({k.decode("latin-1"): v.decode("latin-1")
                                     for k, v in scope.get("headers") or []})
        try:
            await self.app(scope, receive, send)
        finally:
            request_headers.reset(token)
