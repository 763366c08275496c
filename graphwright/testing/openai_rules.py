"""The request rules the OpenAI chat completions API enforces with HTTP 400, as a pure check.

The scripted server applies them to every request, so every test that talks to it
also proves the messages graphwright sends would be accepted by the real API.
"""

from __future__ import annotations

import re
from typing import Any

Problem = tuple[str, str]  # (param at fault, the API's message)
ROLES = {"system", "developer", "user", "assistant", "tool"}
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def violation(body: dict[str, Any]) -> Problem | None:
    """The first rule `body` breaks, or None when the API would accept it."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages", "'messages' must be a non-empty array"
    for check in (_roles_and_content, _tool_sequence):
        problem = check(messages)
        if problem:
            return problem
    return _tools(body) or _response_format(body, messages) or _stream_options(body)


def _roles_and_content(messages: list[dict[str, Any]]) -> Problem | None:
    for i, m in enumerate(messages):
        role = m.get("role")
        if role not in ROLES:
            return (
                f"messages.[{i}].role",
                f"Invalid value: '{role}'. Supported values are: {sorted(ROLES)}.",
            )
        content = m.get("content")
        if role == "assistant":
            calls = m.get("tool_calls")
            if content is None and not calls:
                return (
                    f"messages.[{i}].content",
                    "Invalid value for 'content': expected a string, got null.",
                )
            for j, c in enumerate(calls or []):
                fn = c.get("function") or {}
                if (
                    not c.get("id")
                    or c.get("type") != "function"
                    or not isinstance(fn.get("arguments"), str)
                ):
                    return (
                        f"messages.[{i}].tool_calls.[{j}]",
                        "Invalid tool call: id, type 'function' and string arguments are required.",
                    )
                if not TOOL_NAME.match(str(fn.get("name") or "")):
                    return (
                        f"messages.[{i}].tool_calls.[{j}].function.name",
                        f"Invalid 'name': '{fn.get('name')}'.",
                    )
        elif content is None:
            return (
                f"messages.[{i}].content",
                "Invalid value for 'content': expected a string, got null.",
            )
        if role == "tool" and not m.get("tool_call_id"):
            return (
                f"messages.[{i}].tool_call_id",
                "Missing required parameter: 'messages.[{i}].tool_call_id'.",
            )
    return None


def _tool_sequence(messages: list[dict[str, Any]]) -> Problem | None:
    """Every assistant tool call answered by exactly one tool message, before anything else."""
    pending: list[str] = []
    for i, m in enumerate(messages):
        if m.get("role") == "tool":
            if m.get("tool_call_id") not in pending:
                return (
                    f"messages.[{i}].role",
                    "Invalid parameter: messages with role 'tool' must be "
                    "a response to a preceeding message with 'tool_calls'.",
                )
            pending.remove(m["tool_call_id"])
            continue
        if pending:
            return f"messages.[{i}].role", _unanswered(pending)
        if m.get("role") == "assistant":
            pending = [c["id"] for c in m.get("tool_calls") or []]
    if pending:
        return f"messages.[{len(messages) - 1}].role", _unanswered(pending)
    return None


def _unanswered(ids: list[str]) -> str:
    return (
        "An assistant message with 'tool_calls' must be followed by tool messages responding "
        f"to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
        f"{', '.join(ids)}"
    )


def _tools(body: dict[str, Any]) -> Problem | None:
    tools = body.get("tools")
    if tools is None:
        if body.get("tool_choice") is not None:
            return (
                "tool_choice",
                "Invalid value for 'tool_choice': "
                "'tool_choice' is only allowed when 'tools' are specified.",
            )
        return None
    if not isinstance(tools, list) or not tools:
        return "tools", "Invalid 'tools': empty array. Expected an array with minimum length 1."
    for i, t in enumerate(tools):
        fn = t.get("function") or {}
        if t.get("type") != "function" or not TOOL_NAME.match(str(fn.get("name") or "")):
            return (
                f"tools.[{i}]",
                "Invalid tool: type 'function' and a valid function name are required.",
            )
        if "parameters" in fn and not isinstance(fn["parameters"], dict):
            return f"tools.[{i}].function.parameters", "Invalid 'parameters': expected an object."
    return None


def _response_format(body: dict[str, Any], messages: list[dict[str, Any]]) -> Problem | None:
    fmt = body.get("response_format")
    if fmt is None:
        return None
    kind = fmt.get("type")
    if kind == "json_schema":
        spec = fmt.get("json_schema") or {}
        if not re.match(r"^[a-zA-Z0-9_-]{1,64}$", str(spec.get("name") or "")) or not isinstance(
            spec.get("schema"), dict
        ):
            return (
                "response_format.json_schema",
                "Invalid 'response_format.json_schema': a name and a schema object are required.",
            )
        return None
    if kind == "json_object":
        if not any("json" in str(m.get("content") or "").lower() for m in messages):
            return "messages", (
                "'messages' must contain the word 'json' in some form, to use "
                "'response_format' of type 'json_object'."
            )
        return None
    if kind != "text":
        return "response_format.type", f"Invalid value: '{kind}'."
    return None


def _stream_options(body: dict[str, Any]) -> Problem | None:
    if body.get("stream_options") is not None and not body.get("stream"):
        return (
            "stream_options",
            "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
        )
    return None
