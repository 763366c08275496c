"""Limits of the HTTP service.

A cap on request bodies (413) and a per-identity token bucket on run creation (429), kept in Redis
by one script so every API process shares it. The bucket counts runs, not requests: a batch of ten
takes ten tokens, a cron one.
"""

from __future__ import annotations

import json
import math
from typing import Annotated

import redis
from fastapi import Depends, HTTPException, Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from graphwright.checkpoints.errors import RedisUnavailableError
from graphwright.server.auth.access import current_user
from graphwright.server.auth.authority import User
from graphwright.server.offload import offload

# KEYS[1] bucket hash; ARGV capacity, tokens per second, tokens wanted.
# Takes all of them or none. Returns {allowed, retry-after ms}.
TOKEN_BUCKET = """
local capacity, rate, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local tokens = tonumber(redis.call('HGET', KEYS[1], 'tokens') or capacity)
local last = tonumber(redis.call('HGET', KEYS[1], 'at') or now)
tokens = math.min(capacity, tokens + (now - last) * rate / 1000)
local allowed, wait = 0, 0
if tokens >= cost then
  tokens, allowed = tokens - cost, 1
else
  wait = math.ceil((cost - tokens) * 1000 / rate)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', now)
redis.call('PEXPIRE', KEYS[1], math.ceil(capacity * 1000 / rate) + 1000)
return {allowed, wait}
"""


class BodyLimit:
    """ASGI middleware: a body longer than `max_bytes` is answered 413 before any route runs."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.max_bytes <= 0:
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(send)
            return
        chunks: list[Message] = []
        size = 0
        while True:  # read the body (at most the cap), then hand it on unchanged
            message = await receive()
            chunks.append(message)
            size += len(message.get("body", b""))
            if size > self.max_bytes:
                await self._refuse(send)
                return
            if message["type"] != "http.request" or not message.get("more_body"):
                break

        async def replay() -> Message:
            return chunks.pop(0) if chunks else await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, send: Send) -> None:
        body = json.dumps(
            {
                "detail": f"request body is larger than {self.max_bytes} bytes "
                "(GRAPHWRIGHT_MAX_BODY_BYTES)"
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


async def run_rate_limit(request: Request, user: Annotated[User, Depends(current_user)]) -> None:
    """Take one token from the caller's bucket, or answer 429 with the wait in Retry-After.

    No thread hop when no rate is set.
    """
    if request.app.state.service.orch.settings.run_rate_per_minute > 0:
        await offload(take_runs, request, user, 1)


def take_runs(request: Request, user: User, runs: int) -> None:
    """Take `runs` tokens from the caller's bucket at once, or answer 429.

    A batch larger than the bucket can never pass: 429 saying so, without Retry-After.
    """
    settings = request.app.state.service.orch.settings
    per_minute: float = settings.run_rate_per_minute
    if per_minute <= 0:
        return
    orch = request.app.state.service.orch
    who = user.identity or "shared"  # the static key is one caller
    capacity = max(1, int(settings.run_burst or math.ceil(per_minute)))
    if runs > capacity:
        raise HTTPException(
            status_code=429,
            detail=f"{runs} runs at once is more than the "
            f"{capacity} allowed (GRAPHWRIGHT_RUN_BURST); send fewer",
        )
    try:
        allowed, wait_ms = orch.client.eval(
            TOKEN_BUCKET, 1, orch.keys.rate(who), capacity, per_minute / 60, runs
        )
    except redis.RedisError as exc:
        raise RedisUnavailableError(f"cannot check the run rate limit: {exc}") from exc
    if not int(allowed):
        retry = max(1, math.ceil(int(wait_ms) / 1000))
        raise HTTPException(
            status_code=429,
            headers={"Retry-After": str(retry)},
            detail=f"too many runs created; retry in {retry} s (GRAPHWRIGHT_RUN_RATE per minute)",
        )


RateLimited = [Depends(run_rate_limit)]
