"""A user's own Starlette or FastAPI app (`http.app` in `langgraph.json`).

Served beside the API and let in by the same authentication.
"""

from __future__ import annotations

from typing import Any

from fastapi import HTTPException, Request
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from graphwright.server.auth.authority import Authority
from graphwright_errors import ConfigurationError


class Authenticated:
    """Lets an HTTP request through to `app` only when the service's auth lets it in."""

    def __init__(self, app: ASGIApp, authority: Authority) -> None:
        self.app = app
        self.authority = authority

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            try:
                await self.authority.authenticate(Request(scope, receive))
            except HTTPException as exc:
                refused = JSONResponse(
                    {"detail": exc.detail},
                    status_code=exc.status_code,
                    headers=dict(exc.headers or {}),
                )
                await refused(scope, receive, send)
                return
        await self.app(scope, receive, send)


def checked_app(value: Any, where: str) -> ASGIApp:
    """The loaded `http.app`, or a ConfigurationError naming what it is instead."""
    if not callable(value):
        raise ConfigurationError(
            f"http.app {where!r} is {type(value).__name__}, not a Starlette or FastAPI app"
        )
    return value  # type: ignore[no-any-return]  # an ASGI callable
