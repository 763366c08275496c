"""The commands of the thread-centric streaming protocol.

`POST /threads/{id}/commands`, and the same over its WebSocket: `run.start` and `input.respond`
start ordinary runs through this app's own routes as the caller (`http._inner_calls`), so `Auth`
decides and isolation holds as on `/threads/{id}/runs`; the subscription commands build filters.
"""

from __future__ import annotations

import uuid
from typing import Any

from graphwright.server.http._inner_calls import Inner
from graphwright.server.http._thread_events import Filter, supported

KNOWN = frozenset(
    {
        "run.start",
        "input.respond",
        "agent.getTree",
        "subscription.subscribe",
        "subscription.unsubscribe",
        "subscription.reconnect",
    }
)
# What a protocol run streams into its Redis stream: the protocol's events derive from these
# (the reference's protocol runs send values, messages and lifecycle; custom, updates, tasks
# and checkpoints never reach its wire). Its `messages` are content-block events, which the
# marker in its configurable asks the executor for, as the reference marks its protocol runs.
RUN_MODES = ["values", "messages-tuple"]
PROTOCOL_MARKER = "__event_streaming_v2"

Reply = dict[str, Any]


def error(command_id: Any, code: str, message: str) -> Reply:
    """An error frame as the reference shapes it."""
    return {"type": "error", "id": command_id, "error": code, "message": message}


def success(command_id: Any, result: dict[str, Any], seq: int = 0) -> Reply:
    """A success frame; `applied_through_seq` tells the client which events it covers."""
    return {
        "type": "success",
        "id": command_id if isinstance(command_id, int) else 0,
        "result": result,
        "meta": {"applied_through_seq": seq},
    }


def well_formed(payload: Any) -> bool:
    """A command has an integer id and a string method (else 400, or an error frame)."""
    return (
        isinstance(payload, dict)
        and isinstance(payload.get("id"), int)
        and not isinstance(payload.get("id"), bool)
        and isinstance(payload.get("method"), str)
    )


def malformed(payload: Any) -> Reply:
    """The error frame for a command that is not well formed, echoing its id if it has one."""
    command_id = payload.get("id") if isinstance(payload, dict) else None
    return error(
        command_id,
        "invalid_argument",
        "Protocol commands must include an integer id and string method.",
    )


def subscription(params: Any) -> Filter | str:
    """The filter a `subscription.subscribe` (or an SSE body) asks for, or why not."""
    params = params if isinstance(params, dict) else {}
    channels = params.get("channels")
    if not isinstance(channels, list) or not channels:
        return "subscription.subscribe requires a non-empty channels array."
    if not all(isinstance(c, str) and supported(c) for c in channels):
        return "subscription.subscribe received an unsupported channel."
    spaces = params.get("namespaces")
    namespaces = (
        [list(ns) for ns in spaces]
        if isinstance(spaces, list)
        and all(isinstance(ns, list) and all(isinstance(s, str) for s in ns) for ns in spaces)
        else None
    )
    depth = params.get("depth")
    if not isinstance(depth, int) or isinstance(depth, bool) or depth < 0:
        depth = None
    return Filter(channels=frozenset(channels), namespaces=namespaces or None, depth=depth)


def detail(answer: Any) -> str:
    """What an inner route's refusal says."""
    try:
        body = answer.json()
    except ValueError:
        return str(answer.text)[:500]
    return (
        str(body.get("detail") or body.get("message") or body)
        if isinstance(body, dict)
        else str(body)
    )


class Commands:
    """One thread's commands, as one caller sends them."""

    def __init__(self, inner: Inner, thread_id: str) -> None:
        self.inner = inner
        self.thread_id = thread_id

    async def handle(self, command: dict[str, Any]) -> Reply:
        """The reply to a well-formed command.

        The subscription commands are the caller's (a WebSocket keeps its own); here they are
        answered as a connection without any.
        """
        method, command_id = command["method"], command["id"]
        params: dict[str, Any] = command.get("params") or {}
        params = params if isinstance(params, dict) else {}
        if method not in KNOWN:
            return error(command_id, "unknown_command", f"Unknown protocol command: {method}")
        if method == "run.start":
            return await self.start(command_id, params)
        if method == "input.respond":
            return await self.respond(command_id, params)
        if method == "subscription.subscribe":
            found = subscription(params)
            if isinstance(found, str):
                return error(command_id, "invalid_argument", found)
            return success(command_id, {"subscription_id": str(uuid.uuid4()), "replayed_events": 0})
        if method == "subscription.unsubscribe":
            sub_id = params.get("subscription_id")
            if not isinstance(sub_id, str):
                return error(
                    command_id,
                    "invalid_argument",
                    "subscription.unsubscribe requires a subscription_id.",
                )
            return error(command_id, "no_such_subscription", f"Unknown subscription: {sub_id}")
        return error(command_id, "no_such_run", "No active run is bound to this thread.")

    async def run(self, body: dict[str, Any]) -> tuple[str | None, str]:
        """Start a run on the thread (created if new): its id, or None and the refusal."""
        answer = await self.inner.call("POST", f"/threads/{self.thread_id}/runs", body)
        if not answer.is_success:
            return None, detail(answer)
        return str(answer.json()["run_id"]), ""

    def run_body(self, assistant_id: str, params: dict[str, Any]) -> dict[str, Any]:
        strategy = params.get("multitask_strategy") or params.get("multitaskStrategy")
        body: dict[str, Any] = {
            "assistant_id": assistant_id,
            "stream_mode": RUN_MODES,
            "stream_subgraphs": True,
            "if_not_exists": "create",
            "on_completion": "keep",
            "multitask_strategy": strategy
            if strategy in ("reject", "interrupt", "rollback", "enqueue")
            else "enqueue",
        }
        if isinstance(params.get("metadata"), dict):
            body["metadata"] = params["metadata"]
        config = params.get("config")
        config = config if isinstance(config, dict) else {}
        configurable = config.get("configurable")
        configurable = configurable if isinstance(configurable, dict) else {}
        body["config"] = {**config, "configurable": {**configurable, PROTOCOL_MARKER: True}}
        return body

    async def start(self, command_id: int, params: dict[str, Any]) -> Reply:
        assistant_id = params.get("assistant_id")
        if not isinstance(assistant_id, str) or not assistant_id:
            return error(command_id, "invalid_argument", "run.start requires an assistant_id.")
        body = self.run_body(assistant_id, params)
        body["input"] = params.get("input")
        run_id, refusal = await self.run(body)
        if run_id is None:
            return error(command_id, "unknown_error", refusal)
        return success(command_id, {"run_id": run_id})

    async def respond(self, command_id: int, params: dict[str, Any]) -> Reply:
        entries = params.get("responses")
        if not isinstance(entries, list):
            entries = [params]
        if not entries:
            return error(
                command_id, "invalid_argument", "input.respond requires at least one response."
            )
        answers: dict[str, Any] = {}
        for entry in entries:
            interrupt_id = entry.get("interrupt_id") if isinstance(entry, dict) else None
            if not isinstance(interrupt_id, str):
                return error(
                    command_id, "invalid_argument", "input.respond requires an interrupt_id."
                )
            answers[interrupt_id] = entry.get("response")
        thread = await self.inner.call("GET", f"/threads/{self.thread_id}")
        metadata = (thread.json().get("metadata") or {}) if thread.is_success else {}
        assistant_id = metadata.get("assistant_id")
        if not isinstance(assistant_id, str):  # no thread the caller may see, or no run on it
            return error(command_id, "no_such_run", "No interrupted run is bound to this thread.")
        state = await self.inner.call("GET", f"/threads/{self.thread_id}/state")
        pending = (
            {i.get("id") for i in state.json().get("interrupts") or []}
            if state.is_success
            else set()
        )
        for interrupt_id in answers:
            if interrupt_id not in pending:
                return error(
                    command_id,
                    "no_such_interrupt",
                    f"Unknown or already-consumed interrupt: {interrupt_id}",
                )
        body = self.run_body(assistant_id, params)
        # One answer to the one pending interrupt goes as itself: LangGraph resumes it alike,
        # and graphwright's own gates check a decision in that form (a map is by call id).
        one = len(answers) == 1 and len(pending) == 1
        body["command"] = {
            "resume": next(iter(answers.values())) if one else answers,
            **{k: params[k] for k in ("update", "goto") if params.get(k) is not None},
        }
        run_id, refusal = await self.run(body)
        if run_id is None:
            return error(command_id, "unknown_error", refusal)
        return success(command_id, {})
