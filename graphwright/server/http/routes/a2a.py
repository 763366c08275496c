"""`/a2a/{assistant_id}` and the agent cards.

An assistant as an Agent2Agent agent (A2A 1.0 over JSON-RPC: SendMessage, SendStreamingMessage,
GetTask, CancelTask), as the reference serves it. A task is a thread (its context) and the runs of
it; each call goes through this same app with the caller's headers (`http._inner_calls`), so its
runs are ordinary runs and a gate in one is a task waiting for input (`TASK_STATE_INPUT_REQUIRED`).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from importlib.metadata import version
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from graphwright.server.extras import a2a_tasks as a2a
from graphwright.server.extras.a2a_tasks import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    error,
)
from graphwright.server.http._inner_calls import Inner, UnsafeIdError, segment
from graphwright.server.http.deps import Guarded

router = APIRouter(tags=["a2a"])
LEGACY_ROLE = {"ROLE_USER": "user", "ROLE_AGENT": "agent"}
LEGACY_STATE = {
    f"TASK_STATE_{s.upper().replace('-', '_')}": s
    for s in (
        "submitted",
        "working",
        "completed",
        "failed",
        "canceled",
        "input-required",
        "rejected",
        "auth-required",
    )
}
RUNS_READ = 100  # a context's runs read to find a task's latest


def spec_format(data: Any) -> Any:
    """The v0.x spelling, for a caller that named a v0.x method.

    Lowercase roles and states, the task unwrapped.
    """
    if isinstance(data, dict):
        if list(data) == ["task"]:
            return spec_format(data["task"])
        return {
            k: LEGACY_ROLE.get(v, v)
            if k == "role" and isinstance(v, str)
            else LEGACY_STATE.get(v, v)
            if k == "state" and isinstance(v, str)
            else spec_format(v)
            for k, v in data.items()
        }
    if isinstance(data, list):
        return [spec_format(item) for item in data]
    return data


def rpc_error(code: int, message: str, id_: Any = None) -> JSONResponse:
    return JSONResponse({"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": message}})


def card_url(request: Request, assistant_id: str) -> str:
    prefix = str(getattr(request.app.state, "mount_prefix", ""))
    return f"{str(request.base_url).rstrip('/')}{prefix}/a2a/{assistant_id}"


async def agent_card(request: Request, assistant_id: str) -> Response:
    inner = Inner(request)
    try:
        assistant_id = segment(assistant_id)
    except UnsafeIdError as exc:
        return JSONResponse({"error": str(exc)}, status_code=404)
    found = await inner.call("GET", f"/assistants/{assistant_id}")
    if not found.is_success:
        return JSONResponse(
            {"error": f"Assistant {assistant_id} not found"}, status_code=found.status_code
        )
    schemas = await inner.call("GET", f"/assistants/{assistant_id}/schemas")
    schema = schemas.json().get("input_schema") if schemas.is_success else None
    return JSONResponse(
        a2a.card(found.json(), card_url(request, assistant_id), version("graphwright"), schema)
    )


@router.get("/.well-known/agent-card.json", dependencies=Guarded)
async def well_known_card(request: Request, assistant_id: str) -> Response:
    return await agent_card(request, assistant_id)


@router.get("/a2a/{assistant_id}/.well-known/agent-card.json", dependencies=Guarded)
async def assistant_card(request: Request, assistant_id: str) -> Response:
    return await agent_card(request, assistant_id)


class Tasks:
    """One caller's view of an assistant's tasks, through the app's own routes."""

    def __init__(self, request: Request, assistant_id: str) -> None:
        self.inner = Inner(request)
        self.assistant_id = assistant_id

    async def latest_run(self, task: str) -> dict[str, Any] | None:
        """The newest run of the task: the one that began it or one it continued with."""
        named = a2a.parse_task_id(task)
        if named is None:
            return None
        context_id, first = named
        try:
            context_id = segment(context_id)
        except UnsafeIdError:
            return None
        runs = await self.inner.call("GET", f"/threads/{context_id}/runs?limit={RUNS_READ}")
        if not runs.is_success:
            return None
        return next(
            (
                r
                for r in runs.json()
                if r["run_id"] == first or (r.get("metadata") or {}).get("a2a_task_id") == task
            ),
            None,
        )

    async def waiting(self, context_id: str) -> bool:
        """Whether the context stops at a gate (a cancelled run leaves none)."""
        state = await self.inner.call("GET", f"/threads/{context_id}/state")
        return state.is_success and bool(state.json().get("interrupts"))

    async def start(
        self, params: dict[str, Any]
    ) -> tuple[dict[str, Any], str, str] | dict[str, Any]:
        """Check the message and start its run: (run, task id, context id), or an error."""
        if problem := invalid_message(params):
            return problem
        message: dict[str, Any] = params["message"]
        parts: list[Any] = message["parts"]
        assistant = await self.inner.call("GET", f"/assistants/{self.assistant_id}")
        if not assistant.is_success:
            return error(INVALID_PARAMS, f"Assistant {self.assistant_id} not found")
        body: dict[str, Any] = {
            "assistant_id": self.assistant_id,
            "if_not_exists": "create",
            "context": params.get("context"),
        }
        task: str | None = message.get("taskId")
        if task is not None:
            context_id = await self.continued(task, parts, body)
        else:
            context_id = new_context(message)
        if isinstance(context_id, dict):
            return context_id
        if "command" not in body:
            body["input"] = a2a.run_input(parts, str(message["role"]), str(message["messageId"]))
        run = await self.inner.call("POST", f"/threads/{context_id}/runs", body)
        if not run.is_success:
            detail = run.json().get("detail") if run.content else run.reason_phrase
            return error(INVALID_PARAMS, str(detail))
        started = run.json()
        return started, task or a2a.task_id(context_id, started["run_id"]), context_id

    async def continued(
        self, task: str, parts: list[Any], body: dict[str, Any]
    ) -> str | dict[str, Any]:
        """The context of the task a message continues (its answer to a gate), or an error."""
        latest = await self.latest_run(task)
        if latest is None:
            return error(a2a.TASK_NOT_FOUND, f"Task not found: {task}")
        if a2a.STATE_OF_RUN.get(latest["status"]) in a2a.TERMINAL and not await self.waiting(
            latest["thread_id"]
        ):
            return error(a2a.UNSUPPORTED, "A terminal task cannot accept another message")
        context_id: str = latest["thread_id"]
        body["metadata"] = {"a2a_task_id": task}
        if await self.waiting(context_id):  # its answer to the gate
            body["command"] = {"resume": a2a.resume_value(parts)}
        return context_id

    async def output(self, run: dict[str, Any]) -> dict[str, Any]:
        joined = await self.inner.json(
            "GET", f"/threads/{run['thread_id']}/runs/{run['run_id']}/join"
        )
        return joined if isinstance(joined, dict) else {"output": joined}

    async def send(self, params: dict[str, Any]) -> dict[str, Any]:
        started = await self.start(params)
        if isinstance(started, dict):
            return started
        run, task, context_id = started
        output = await self.output(run)
        return {"result": {"task": a2a.task_of(output, task, context_id, self.assistant_id)}}

    async def get(self, params: dict[str, Any]) -> dict[str, Any]:
        task = str(params.get("id") or "")
        latest = await self.latest_run(task)
        if latest is None:
            return error(a2a.TASK_NOT_FOUND, f"Task not found: {task}")
        context_id = latest["thread_id"]
        state = (
            "TASK_STATE_INPUT_REQUIRED"
            if await self.waiting(context_id)
            else a2a.STATE_OF_RUN.get(latest["status"], "TASK_STATE_WORKING")
        )
        status: dict[str, Any] = {"state": state, "timestamp": a2a.now()}
        if state in a2a.STATUS_TEXT:
            status["message"] = a2a.agent_message(a2a.STATUS_TEXT[state], task, None)
        values = await self.inner.json("GET", f"/threads/{context_id}/state")
        messages = (
            (values.get("values") or {}).get("messages") or []
            if isinstance(values.get("values"), dict)
            else []
        )
        return {
            "result": {
                "kind": "task",
                "id": task,
                "contextId": context_id,
                "status": status,
                "history": a2a.history(messages, task, context_id),
            }
        }

    async def cancel(self, params: dict[str, Any]) -> dict[str, Any]:
        task = str(params.get("id") or "")
        latest = await self.latest_run(task)
        if latest is None:
            return error(a2a.TASK_NOT_FOUND, f"Task not found: {task}")
        if latest["status"] not in ("pending", "running"):
            return error(a2a.NOT_CANCELABLE, "Task is not cancelable in its current state")
        path = f"/threads/{latest['thread_id']}/runs/{latest['run_id']}/cancel?wait=true"
        await self.inner.call("POST", path)
        return {
            "result": {
                "kind": "task",
                "id": task,
                "contextId": latest["thread_id"],
                "status": {"state": "TASK_STATE_CANCELED", "timestamp": a2a.now()},
            }
        }

    async def stream(self, params: dict[str, Any], id_: Any, legacy: bool) -> AsyncIterator[bytes]:
        """The task as submitted, then its artifact and its final status, as SSE events.

        A2A 1.0's `artifactUpdate`/`statusUpdate` (the reference sends v0.x's flat updates here,
        which the 1.0 client reads as empty events), v0.x's for v0.x callers.
        """

        def event(result: dict[str, Any]) -> bytes:
            if legacy:
                result = spec_format(result)
            elif "result" in result and "kind" in result["result"]:
                update = result["result"]
                wrapper = (
                    "artifactUpdate" if update["kind"] == "artifact-update" else "statusUpdate"
                )
                result = {"result": {wrapper: update}}
            data = json.dumps({"jsonrpc": "2.0", "id": id_, **result})
            return f"event: message\ndata: {data}\n\n".encode()

        started = await self.start(params)
        if isinstance(started, dict):
            yield event(started)
            return
        run, task, context_id = started
        message = params["message"]
        submitted = {
            "kind": "task",
            "id": task,
            "contextId": context_id,
            "history": [{**message, "kind": "message", "taskId": task, "contextId": context_id}],
            "status": {"state": "TASK_STATE_SUBMITTED", "timestamp": a2a.now()},
        }
        yield event({"result": {"task": submitted}})
        done = a2a.task_of(
            await self.output(run), task, context_id, self.assistant_id, with_history=False
        )
        for artifact in done.get("artifacts") or []:
            yield event(
                {
                    "result": {
                        "taskId": task,
                        "contextId": context_id,
                        "kind": "artifact-update",
                        "artifact": artifact,
                        "append": False,
                        "lastChunk": True,
                    }
                }
            )
        yield event(
            {
                "result": {
                    "taskId": task,
                    "contextId": context_id,
                    "kind": "status-update",
                    "status": done["status"],
                    "final": True,
                }
            }
        )


async def dispatch(tasks: Tasks, method: str, params: dict[str, Any]) -> dict[str, Any]:
    if method == "SendMessage":
        return await tasks.send(params)
    if method == "GetTask":
        return await tasks.get(params)
    if method == "CancelTask":
        return await tasks.cancel(params)
    return error(METHOD_NOT_FOUND, f"Method not found: {method}")


@router.post("/a2a/{assistant_id}", dependencies=Guarded)
async def a2a_post(assistant_id: str, request: Request) -> Response:
    """One JSON-RPC request to the assistant's agent."""
    try:
        message = json.loads(await request.body())
    except json.JSONDecodeError:
        return rpc_error(-32700, "Invalid JSON payload")
    if not isinstance(message, dict):
        return rpc_error(INVALID_REQUEST, "Invalid message format: expected object")
    id_ = message.get("id")
    if message.get("jsonrpc") != "2.0":
        return rpc_error(
            INVALID_REQUEST, "Invalid JSON-RPC message: missing or invalid jsonrpc version", id_
        )
    if id_ is None:  # a notification or a response: nothing to answer
        return Response(status_code=202)
    method = str(message.get("method") or "")
    legacy = method in a2a.METHODS
    method = a2a.METHODS.get(method, method)
    try:
        assistant_id = str(uuid.UUID(assistant_id))
    except ValueError:
        return rpc_error(INVALID_PARAMS, "Invalid assistant ID: must be a UUID", id_)
    tasks, params = Tasks(request, assistant_id), message.get("params") or {}
    if method == "SendStreamingMessage":
        return StreamingResponse(tasks.stream(params, id_, legacy), media_type="text/event-stream")
    answered = await dispatch(tasks, method, params)
    body = {"jsonrpc": "2.0", "id": id_, **answered}
    return JSONResponse(spec_format(body) if legacy else body)


@router.get("/a2a/{assistant_id}", dependencies=Guarded)
def a2a_get(assistant_id: str) -> Response:
    """No server-initiated stream: every answer comes with its request."""
    return Response(status_code=405)


def invalid_message(params: dict[str, Any]) -> dict[str, Any] | None:
    """The error for a message A2A requires more of (an id, a role, a part), if any."""
    message = params.get("message")
    if not isinstance(message, dict):
        return error(INVALID_PARAMS, "Missing 'message' in params")
    for key in ("messageId", "role"):
        if not message.get(key):
            return error(INVALID_PARAMS, f"Missing required '{key}' in message")
    parts = message.get("parts")
    if not isinstance(parts, list) or not parts:
        return error(INVALID_PARAMS, "Message must contain at least one part")
    return None


def new_context(message: dict[str, Any]) -> str | dict[str, Any]:
    """The context a message with no task starts in (a new one if unnamed), or an error."""
    try:
        return segment(message.get("contextId") or str(uuid.uuid4()))
    except UnsafeIdError as exc:
        return error(INVALID_PARAMS, f"contextId: {exc}")
