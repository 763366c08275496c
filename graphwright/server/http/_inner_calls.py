"""Calls to this same app on a caller's behalf (`/mcp`, `/a2a`).

In-process (ASGI), with the caller's own headers, so every inner call is authenticated and
authorized as the caller, and its runs are ordinary runs, as the reference's protocol adapters call
its API.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
from starlette.requests import HTTPConnection

from graphwright.server.http.deps import service

# An id that goes into an inner call's path: one segment, nothing a route could read as more.
SEGMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")


class UnsafeIdError(ValueError):
    """An id from a protocol message that cannot name a thread, run or assistant."""


def segment(value: Any) -> str:
    """`value` as one path segment of an inner call.

    Refused (UnsafeIdError) if it holds anything but letters, digits and `_.:-` (a `/` would reach
    another route).
    """
    text = str(value)
    if not SEGMENT.fullmatch(text) or ".." in text:
        raise UnsafeIdError(f"not a valid id: {text[:80]!r}")
    return text


# Headers of the caller's request that do not describe the inner calls' own bodies.
NOT_FORWARDED = frozenset(
    {
        "host",
        "content-length",
        "content-type",
        "accept",
        "accept-encoding",
        "connection",
        "transfer-encoding",
    }
)


class Inner:
    """Calls to this app as the caller made them: their headers, in-process (ASGI)."""

    def __init__(self, request: HTTPConnection) -> None:
        self.headers = {k: v for k, v in request.headers.items() if k.lower() not in NOT_FORWARDED}
        # The caller's Host too: it passed the server's Host check (browsers.py) for the outer
        # call, and the inner calls go through the same check.
        self.headers["host"] = request.headers.get("host") or "localhost"
        self.prefix = str(getattr(request.app.state, "mount_prefix", ""))
        self.app = request.app
        self.svc = service(request)

    async def call(self, method: str, path: str, body: Any = None) -> httpx.Response:
        transport = httpx.ASGITransport(app=self.app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://graphwright", timeout=None
        ) as client:
            return await client.request(method, self.prefix + path, json=body, headers=self.headers)

    async def json(self, method: str, path: str, body: Any = None) -> Any:
        answer = await self.call(method, path, body)
        answer.raise_for_status()
        return answer.json()
