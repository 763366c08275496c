"""Assistants as MCP tools, as the reference's `/mcp` shows them.

A tool name from the assistant's name, its input schema with LangChain message types made a plain
string, and a run's output as the tool's text. Pure: no I/O here (`http/routes/mcp.py` does it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# JSON-RPC error codes: https://www.jsonrpc.org/specification#error_object
INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601
SUPPORTED_VERSIONS = frozenset({"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"})
LATEST_VERSION = "2025-11-25"
PAGE = 100  # assistants per tools/list page, as the reference's
NAME_MAX = 128
INVALID_NAME_CHARS = re.compile(r"[^a-zA-Z0-9_\-.]")
MESSAGE_TYPES = frozenset(
    {
        f"{kind}{chunk}"
        for kind in ("AI", "Human", "Chat", "System", "Function", "Tool")
        for chunk in ("Message", "MessageChunk")
    }
)
SUPPORT_TYPES = frozenset(
    {
        "ToolCall",
        "ToolCallChunk",
        "InvalidToolCall",
        "UsageMetadata",
        "InputTokenDetails",
        "OutputTokenDetails",
    }
)
ANNOTATIONS = {
    "readOnlyHint": False,
    "destructiveHint": False,
    "idempotentHint": False,
    "openWorldHint": True,
}
REF = "#/$defs/"


def tool_name(assistant_name: str) -> str:
    r"""A valid MCP tool name (`^[a-zA-Z0-9_\-.]{1,128}$`) from an assistant's name."""
    name = re.sub(r"\s+", "_", assistant_name.strip())
    return INVALID_NAME_CHARS.sub("", name)[:NAME_MAX]


def negotiated(requested: Any) -> str:
    """The client's protocol version when supported, else the latest (it may disconnect)."""
    return requested if requested in SUPPORTED_VERSIONS else LATEST_VERSION


def _lists_messages(prop: Mapping[str, Any]) -> bool:
    if prop.get("type") != "array":
        return False
    items = prop.get("items") or {}
    return any(
        str(c.get("$ref", "")).removeprefix(REF) in MESSAGE_TYPES
        for c in items.get("oneOf") or items.get("anyOf") or []
    )


def simplified(schema: dict[str, Any]) -> dict[str, Any]:
    """The input schema for a model to fill.

    A list of LangChain messages becomes the one user message to send, and their definitions go; an
    object type in any case.
    """
    defs = schema.get("$defs")
    if defs and set(defs) & MESSAGE_TYPES:
        for name in MESSAGE_TYPES | SUPPORT_TYPES:
            defs.pop(name, None)
        if not defs:
            del schema["$defs"]
        props = schema.get("properties") or {}
        for key, prop in props.items():
            if _lists_messages(prop):
                props[key] = {
                    "type": "string",
                    "title": prop.get("title", key),
                    "description": "The user message to send to the agent.",
                }
    schema.setdefault("type", "object")
    return schema


def tool(assistant: Mapping[str, Any], name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """An assistant as an MCP tool: its name, title, description and input schema."""
    return {
        "name": name,
        "title": assistant["name"],
        "description": assistant.get("description")
        or f"Tool based on the {assistant['name']} assistant",
        "inputSchema": simplified(schema),
        "annotations": dict(ANNOTATIONS),
    }


def call_result(value: Any, thread_id: str | None) -> dict[str, Any]:
    """A run's output as the tool's result.

    Its error as an error result, else its output as the reference writes it (Python's `repr`). A
    run stopped at a gate says so too, with the thread a reviewer answers it on.
    """
    if isinstance(value, dict) and "__error__" in value:
        return {"isError": True, "content": [{"type": "text", "text": value["__error__"]["error"]}]}
    content = [{"type": "text", "text": repr(value)}]
    if isinstance(value, dict) and value.get("__interrupt__") and thread_id:
        content.append(
            {
                "type": "text",
                "text": (
                    f"The run waits for a reviewer: thread {thread_id} (its review page: "
                    f"/review/{thread_id}). The answer resumes it as a run of that thread."
                ),
            }
        )
    return {"content": content}


def error(code: int, message: str) -> dict[str, Any]:
    """A JSON-RPC error body."""
    return {"error": {"code": code, "message": message}}
