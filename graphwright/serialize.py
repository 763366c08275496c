"""Turn graph state into plain JSON data for the CLI, the HTTP service and RunResult."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage
from pydantic import BaseModel

MESSAGE_FIELDS = ("type", "id", "name", "content", "tool_calls", "invalid_tool_calls",
                  "tool_call_id", "status", "usage_metadata")


def message_data(message: BaseMessage) -> dict[str, Any]:
    data = message.model_dump(include=set(MESSAGE_FIELDS))
    return {k: v for k, v in data.items() if v not in (None, [], {})}


def jsonable(value: Any) -> Any:
    """Messages as dicts, pydantic models dumped, LangGraph objects by their fields."""
    if isinstance(value, BaseMessage):
        return message_data(value)
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if hasattr(value, "value") and hasattr(value, "id") and type(value).__name__ == "Interrupt":
        return {"id": value.id, "value": jsonable(value.value)}
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)
