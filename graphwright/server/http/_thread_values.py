"""A protocol run's `values` as the thread-centric streaming protocol shapes them.

The reference sends each state message in its protocol form: content as content blocks, tool
calls as `tool_call` blocks, and only the fields that say something (no empty
`additional_kwargs`, `tool_calls`, `usage_metadata`...). Pure: `http._thread_events` applies it.
"""

from __future__ import annotations

import json
from typing import Any

MESSAGE_TYPES = frozenset({"human", "ai", "system", "tool", "function", "remove"})
ALIASES = {"assistant": "ai", "user": "human"}
BLOCK_TYPES = frozenset(
    {
        "text",
        "reasoning",
        "tool_call",
        "tool_call_chunk",
        "invalid_tool_call",
        "server_tool_call",
        "server_tool_call_chunk",
        "server_tool_call_result",
        "image",
        "audio",
        "video",
        "file",
        "non_standard",
    }
)


def kind(value: Any) -> str | None:
    """A state message's protocol type, or None if `value` is no message."""
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        return None
    found = ALIASES.get(value["type"], value["type"])
    return found if found in MESSAGE_TYPES else None


def block(value: Any) -> dict[str, Any] | None:
    """One content entry as a protocol content block (None: dropped)."""
    if isinstance(value, str):
        return {"type": "text", "text": value}
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        return None
    if value["type"] in BLOCK_TYPES:
        return value
    if value["type"] == "image_url":
        image = value.get("image_url")
        url = image.get("url") if isinstance(image, dict) else image
        return {"type": "image", "url": url} if isinstance(url, str) else None
    return {"type": "non_standard", "value": dict(value)}


def content(value: Any) -> Any:
    """A message's content: a string stays one, a list becomes content blocks."""
    if not isinstance(value, list):
        return value
    blocks = [b for b in (block(entry) for entry in value) if b is not None]
    return blocks or value


def tool_call(raw: dict[str, Any]) -> dict[str, Any]:
    """A stored tool call as a `tool_call` block, or an `invalid_tool_call` one."""
    args = raw.get("args")
    out: dict[str, Any] = {"type": "tool_call", "name": raw.get("name"), "args": args}
    if isinstance(args, str):
        try:
            out["args"] = json.loads(args) if args else {}
        except ValueError:
            out = {"type": "invalid_tool_call", "name": raw.get("name"), "args": args}
            out["error"] = "Malformed args."
    elif args is None:
        out["args"] = {}
    if not isinstance(raw.get("name"), str):
        out = {"type": "invalid_tool_call", "error": "Incomplete tool call."}
        if isinstance(args, str):
            out["args"] = args
    if isinstance(raw.get("id"), str):
        out["id"] = raw["id"]
    return out


def invalid_call(raw: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "invalid_tool_call"}
    out.update({k: raw[k] for k in ("id", "name", "args") if isinstance(raw.get(k), str)})
    out["error"] = raw["error"] if isinstance(raw.get("error"), str) else "Malformed args."
    return out


def message(value: dict[str, Any], msg_type: str) -> dict[str, Any]:
    """One state message in its protocol form."""
    out: dict[str, Any] = {"type": msg_type, "content": content(value.get("content", ""))}
    out.update({k: value[k] for k in ("id", "name") if isinstance(value.get(k), str)})
    if msg_type in ("ai", "human") and isinstance(value.get("example"), bool):
        out["example"] = value["example"]
    if isinstance(value.get("response_metadata"), dict) and value["response_metadata"]:
        out["response_metadata"] = value["response_metadata"]
    if msg_type == "tool":
        if isinstance(value.get("tool_call_id"), str):
            out["tool_call_id"] = value["tool_call_id"]
        if value.get("status") in ("success", "error"):
            out["status"] = value["status"]
        if "artifact" in value:
            out["artifact"] = value["artifact"]
    if msg_type == "ai":
        calls = [tool_call(c) for c in value.get("tool_calls") or [] if isinstance(c, dict)]
        valid = [c for c in calls if c["type"] == "tool_call"]
        invalid = [
            invalid_call(c) for c in value.get("invalid_tool_calls") or [] if isinstance(c, dict)
        ] or [c for c in calls if c["type"] != "tool_call"]
        if valid:
            out["tool_calls"] = valid
        if invalid:
            out["invalid_tool_calls"] = invalid
    return out


def protocol_values(value: Any) -> Any:
    """A `values` payload with its messages in protocol form and no `__interrupt__` keys."""
    if isinstance(value, list):
        return [
            message(item, found) if (found := kind(item)) else protocol_values(item)
            for item in value
        ]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, entry in value.items():
        if key == "__interrupt__":
            continue
        if key == "messages" and isinstance(entry, list):
            out[key] = [message(i, found) if (found := kind(i)) else i for i in entry]
        else:
            out[key] = protocol_values(entry)
    return out
