"""Thread-centric streaming, as the reference serves it.

`client.threads.stream` of `langgraph-sdk` calls `POST /threads/{id}/commands`, `POST
/threads/{id}/stream/events` (SSE, its filter in the body) and the WebSocket on the same path
(`subscription.subscribe` and `unsubscribe`, and the other commands, in-band). Every read and run
goes through this app's routes as the caller (`http._inner_calls`): a caller who may not read the
thread gets its refusal, and a run started here is an ordinary run.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request, WebSocket, WebSocketDisconnect
from fastapi.responses import JSONResponse, Response
from sse_starlette import EventSourceResponse

from graphwright.server.http._inner_calls import Inner, UnsafeIdError, segment
from graphwright.server.http._thread_commands import (
    Commands,
    error,
    malformed,
    subscription,
    success,
    well_formed,
)
from graphwright.server.http._thread_events import Event, Filter, supported
from graphwright.server.http._thread_follow import follow
from graphwright.server.http.deps import Guarded, service
from graphwright.server.http.launch import Launcher

router = APIRouter(tags=["thread streams"])
REPLAY = 10_000  # events a WebSocket keeps for a later subscription
ALLOWED = (
    "values, updates, messages, tools, custom, lifecycle, input, tasks, or any `custom:<name>`"
)


def bad(detail: str, status: int = 400) -> Response:
    return JSONResponse({"detail": detail}, status_code=status)


async def readable(inner: Inner, thread_id: str) -> Response | None:
    """None when the caller may read the thread; else the refusal of `GET /threads/{id}`."""
    try:
        thread_id = segment(thread_id)
    except UnsafeIdError as exc:
        return bad(str(exc), 404)
    found = await inner.call("GET", f"/threads/{thread_id}")
    if found.is_success:
        return None
    return Response(found.content, status_code=found.status_code, media_type="application/json")


def stream_filter(body: Any) -> Filter | Response:
    """The SSE body's filter, refused as the reference refuses it."""
    channels = body.get("channels") if isinstance(body, dict) else None
    if not isinstance(channels, list) or not channels:
        return bad("channels is required and must be a non-empty array")
    wrong = [
        c if isinstance(c, str) else repr(c)
        for c in channels
        if not isinstance(c, str) or not supported(c)
    ]
    if wrong:
        return bad(
            f"channels contains unsupported entries: {', '.join(wrong[:5])}. Allowed: {ALLOWED}."
        )
    found = subscription(body)
    return found if isinstance(found, Filter) else bad(found)


@router.post("/threads/{thread_id}/commands", dependencies=Guarded)
async def thread_command(thread_id: str, request: Request) -> Response:
    try:
        payload = json.loads(await request.body())
    except ValueError:
        return bad("Invalid JSON body")
    if not well_formed(payload):
        return JSONResponse(malformed(payload), status_code=400)
    inner = Inner(request)
    try:
        thread_id = segment(thread_id)
    except UnsafeIdError as exc:
        return JSONResponse(error(payload["id"], "invalid_argument", str(exc)))
    return JSONResponse(await Commands(inner, thread_id).handle(payload))


@router.post("/threads/{thread_id}/stream/events", dependencies=Guarded)
async def thread_events(thread_id: str, request: Request) -> Response:
    try:
        body = json.loads(await request.body())
    except ValueError:
        return bad("Invalid JSON body")
    wanted = stream_filter(body)
    if isinstance(wanted, Response):
        return wanted
    refused = await readable(Inner(request), thread_id)
    if refused is not None:
        return refused
    since = body.get("since")
    after = since if isinstance(since, int) and not isinstance(since, bool) and since >= 0 else -1

    async def frames() -> AsyncIterator[dict[str, str]]:
        async for event in follow(Launcher(service(request)), thread_id):
            if event["seq"] > after and wanted.matches(event):
                yield {"event": event["method"], "data": json.dumps(event), "id": str(event["seq"])}

    return EventSourceResponse(frames(), ping=10)


class Socket:
    """One WebSocket: its subscriptions, the thread's events so far, one sender at a time."""

    def __init__(self, websocket: WebSocket, thread_id: str) -> None:
        self.websocket = websocket
        self.thread_id = thread_id
        self.subscriptions: dict[str, Filter] = {}
        # replayed to a subscription made after them; the newest only, as the reference keeps
        self.events: deque[Event] = deque(maxlen=REPLAY)
        self.sent: set[int] = set()
        self.lock = asyncio.Lock()

    async def send(self, message: dict[str, Any]) -> None:
        async with self.lock:
            await self.websocket.send_text(json.dumps(message))

    async def deliver(self, event: Event) -> bool:
        if event["seq"] in self.sent or not any(
            f.matches(event) for f in self.subscriptions.values()
        ):
            return False
        self.sent.add(event["seq"])
        await self.send(event)
        return True

    async def pump(self, launch: Launcher) -> None:
        async for event in follow(launch, self.thread_id):
            if len(self.events) == REPLAY:  # the oldest leaves the replay, and its mark
                self.sent.discard(self.events[0]["seq"])
            self.events.append(event)
            await self.deliver(event)

    def seq(self) -> int:
        return self.events[-1]["seq"] if self.events else 0

    async def subscribe(self, command: dict[str, Any]) -> dict[str, Any]:
        found = subscription(command.get("params"))
        if isinstance(found, str):
            return error(command["id"], "invalid_argument", found)
        sub_id = str(uuid.uuid4())
        self.subscriptions[sub_id] = found
        replayed = 0
        for event in list(self.events):
            if found.matches(event):
                replayed += await self.deliver(event)
        return success(
            command["id"], {"subscription_id": sub_id, "replayed_events": replayed}, self.seq()
        )

    def unsubscribe(self, command: dict[str, Any]) -> dict[str, Any]:
        params = command.get("params")
        sub_id = params.get("subscription_id") if isinstance(params, dict) else None
        if not isinstance(sub_id, str):
            return error(
                command["id"],
                "invalid_argument",
                "subscription.unsubscribe requires a subscription_id.",
            )
        if self.subscriptions.pop(sub_id, None) is None:
            return {
                **error(command["id"], "no_such_subscription", f"Unknown subscription: {sub_id}"),
                "meta": {"applied_through_seq": self.seq()},
            }
        return success(command["id"], {}, self.seq())

    async def talk(self, commands: Commands) -> None:
        """Answer the client's commands until it goes."""
        with contextlib.suppress(WebSocketDisconnect):
            while True:
                raw = await self.websocket.receive_text()
                await self.send(await self.answer(raw, commands))

    async def answer(self, raw: str, commands: Commands) -> dict[str, Any]:
        try:
            payload = json.loads(raw)
        except ValueError:
            return error(None, "invalid_argument", "Protocol commands must be valid JSON.")
        if not well_formed(payload):
            return malformed(payload)
        if payload["method"] == "subscription.subscribe":
            return await self.subscribe(payload)
        if payload["method"] == "subscription.unsubscribe":
            return self.unsubscribe(payload)
        reply = await commands.handle(payload)
        return {**reply, "meta": {"applied_through_seq": self.seq()}} if "meta" in reply else reply


@router.websocket("/threads/{thread_id}/stream/events")
async def thread_socket(websocket: WebSocket, thread_id: str) -> None:
    inner = Inner(websocket)
    refused = await readable(inner, thread_id)
    if refused is not None:  # before the handshake completes: the client sees the refusal
        await websocket.close(code=1008, reason=f"http {refused.status_code}")
        return
    await websocket.accept()
    socket = Socket(websocket, thread_id)
    commands = Commands(inner, thread_id)
    pump = asyncio.create_task(socket.pump(Launcher(service(websocket))))
    talk = asyncio.create_task(socket.talk(commands))
    try:
        done, _ = await asyncio.wait({pump, talk}, return_when=asyncio.FIRST_COMPLETED)
        if pump in done:  # the thread's events failed: a clean close, not a silent socket
            with contextlib.suppress(Exception):
                await websocket.close(code=1011, reason="thread stream ended")
    finally:
        for task in (pump, talk):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
