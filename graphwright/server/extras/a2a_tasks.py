"""Agent2Agent (A2A 1.0) shapes as the reference writes them.

An assistant's agent card, a message's parts as a run's input, a thread's messages as a task's
history, a run's output as a task. Pure: no I/O here (`http/routes/a2a.py` does it).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

# JSON-RPC and A2A error codes, as the reference answers them.
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
TASK_NOT_FOUND = -32001
NOT_CANCELABLE = -32002
UNSUPPORTED = -32004
METHODS = {
    "message/send": "SendMessage",
    "message/stream": "SendStreamingMessage",
    "tasks/get": "GetTask",
    "tasks/cancel": "CancelTask",
}  # v0.x names of v1.0 methods
MODES = ["application/json", "text/plain"]
TERMINAL = frozenset({"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED"})
STATE_OF_RUN = {
    "pending": "TASK_STATE_SUBMITTED",
    "running": "TASK_STATE_WORKING",
    "success": "TASK_STATE_COMPLETED",
    "error": "TASK_STATE_FAILED",
    "timeout": "TASK_STATE_FAILED",
    "interrupted": "TASK_STATE_CANCELED",
}
STATUS_TEXT = {
    "TASK_STATE_COMPLETED": "Task completed successfully",
    "TASK_STATE_FAILED": "Task failed with status: error",
    "TASK_STATE_CANCELED": "Task was canceled",
}


def task_id(context_id: str, run_id: str) -> str:
    """A task is named by its thread (its context) and the run that began it."""
    return f"{context_id}:{run_id}"


def parse_task_id(value: str) -> tuple[str, str] | None:
    """The context and run a task id names (`context:run`), or None for another shape."""
    context_id, _, run_id = value.partition(":")
    return (context_id, run_id) if context_id and run_id else None


def now() -> str:
    """An A2A timestamp: ISO 8601 in UTC."""
    return datetime.now(UTC).isoformat()


def card(
    assistant: Mapping[str, Any], url: str, version: str, input_schema: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The agent card of one assistant, served at `url`."""
    name = str(assistant.get("name") or assistant["graph_id"])
    description = assistant.get("description") or f"{name} assistant"
    properties = sorted((input_schema or {}).get("properties") or {})
    return {
        "name": name,
        "description": description,
        "url": url,
        "supportedInterfaces": [
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {
            "streaming": True,
            "pushNotifications": False,
            "stateTransitionHistory": False,
        },
        "defaultInputModes": MODES,
        "defaultOutputModes": MODES,
        "skills": [
            {
                "id": f"{assistant['assistant_id']}-main",
                "name": f"{name} Capabilities",
                "description": description,
                "tags": ["assistant", "langgraph"],
                "examples": [],
                "inputModes": MODES,
                "outputModes": MODES,
                "metadata": {
                    "inputSchema": {
                        "required": list((input_schema or {}).get("required") or []),
                        "properties": properties,
                        "supportsA2A": "messages" in properties,
                    }
                },
            }
        ],
        "version": version,
    }


def texts(parts: Sequence[Mapping[str, Any]]) -> str | None:
    """The text parts of an A2A message, joined; None if it has none."""
    found = [p["text"] for p in parts if isinstance(p.get("text"), str)]
    return "\n".join(found) if found else None


def resume_value(parts: Sequence[Mapping[str, Any]]) -> Any:
    """What answers a gate: a data part's `resume`, else the message's text."""
    for part in parts:
        data = part.get("data")
        if isinstance(data, dict) and "resume" in data:
            return data["resume"]
    return texts(parts)


def run_input(parts: Sequence[Mapping[str, Any]], role: str, message_id: str) -> dict[str, Any]:
    """A message's parts as the run's input.

    Its text as one message (keeping the A2A message's id), its data parts' keys beside it.
    """
    found: dict[str, Any] = {}
    for part in parts:
        if isinstance(part.get("data"), dict):
            found.update({k: v for k, v in part["data"].items() if k != "resume"})
    text = texts(parts)
    if text is not None:
        kind = "assistant" if role in ("ROLE_AGENT", "agent") else "user"
        found["messages"] = [{"role": kind, "content": text, "id": message_id}]
    return found


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(b.get("text", "")) if isinstance(b, dict) else str(b) for b in content)
    return str(content)


def history(messages: Sequence[Any], task: str, context_id: str) -> list[dict[str, Any]]:
    """A thread's user and AI messages as A2A messages of the task."""
    out = []
    for message in messages:
        if not isinstance(message, dict) or message.get("type") not in ("human", "ai"):
            continue
        text = _text_of(message.get("content"))
        if message.get("type") == "ai" and not text:
            continue
        out.append(
            {
                "kind": "message",
                "role": "ROLE_USER" if message["type"] == "human" else "ROLE_AGENT",
                "parts": [{"kind": "text", "text": text}],
                "messageId": str(message.get("id") or uuid.uuid4()),
                "taskId": task,
                "contextId": context_id,
            }
        )
    return out


def reply_parts(output: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The answer of a run: its last AI message's text, else its output as text."""
    messages = output.get("messages")
    if not isinstance(messages, list) or not messages:
        return [{"kind": "text", "text": str(dict(output))}]
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("type") == "ai":
            text = _text_of(message.get("content"))
            if text:
                return [{"kind": "text", "text": text}]
        if isinstance(message, dict) and message.get("type") == "human":
            break
    return [{"kind": "text", "text": ""}]


def agent_message(text: str, task: str, context_id: str | None) -> dict[str, Any]:
    """An A2A message from the agent, within `task` and its context."""
    message = {
        "kind": "message",
        "role": "ROLE_AGENT",
        "parts": [{"kind": "text", "text": text}],
        "messageId": str(uuid.uuid4()),
        "taskId": task,
    }
    return {**message, "contextId": context_id} if context_id else message


def task_of(
    output: Mapping[str, Any],
    task: str,
    context_id: str,
    assistant_id: str,
    *,
    with_history: bool = True,
) -> dict[str, Any]:
    """The task a run's output makes.

    Failed with its error, waiting for input with its gate's questions as an artifact, or completed
    with the answer as an artifact.
    """
    body: dict[str, Any] = {"kind": "task", "id": task, "contextId": context_id}
    if with_history:
        body["history"] = history(output.get("messages") or [], task, context_id)
    if "__error__" in output:
        error = output["__error__"].get("error", "Error")
        body["status"] = {
            "state": "TASK_STATE_FAILED",
            "message": agent_message(f"Error executing assistant: {error}", task, context_id),
        }
    elif output.get("__interrupt__"):
        body["status"] = {"state": "TASK_STATE_INPUT_REQUIRED", "timestamp": now()}
        body["artifacts"] = [
            {
                "artifactId": str(uuid.uuid4()),
                "name": "Interrupt",
                "description": "Agent requires input to continue",
                "parts": [
                    {"kind": "data", "data": {"id": i.get("id"), "value": i.get("value")}}
                    for i in output["__interrupt__"]
                ],
            }
        ]
    else:
        body["status"] = {"state": "TASK_STATE_COMPLETED", "timestamp": now()}
        body["artifacts"] = [
            {
                "artifactId": str(uuid.uuid4()),
                "name": "Assistant Response",
                "description": f"Response from assistant {assistant_id}",
                "parts": reply_parts(output),
            }
        ]
    return body


def error(code: int, message: str) -> dict[str, Any]:
    """A JSON-RPC error body."""
    return {"error": {"code": code, "message": message}}
