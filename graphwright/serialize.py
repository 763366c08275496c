"""Turn graph state into plain JSON data.

`wire` for everything the HTTP service sends (runs, streams and every read, so stored and streamed
state cannot drift apart), `jsonable` for the compact views of the CLI and RunResult.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import BaseMessage
from pydantic import BaseModel

MESSAGE_FIELDS = (
    "type",
    "id",
    "name",
    "content",
    "tool_calls",
    "invalid_tool_calls",
    "tool_call_id",
    "status",
    "usage_metadata",
)


def wire(value: Any) -> Any:
    """JSON data as the Agent Server encodes it.

    Pydantic models (messages too) by `model_dump()` with every field, dataclasses (`Interrupt`) by
    all their fields, a `Send` as `node`/`args`, named tuples as dicts, anything else by `str`.
    """
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, Mapping):
        return {str(k): wire(v) for k, v in value.items()}
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return wire(value._asdict())
    if isinstance(value, list | tuple | set | frozenset):
        return [wire(v) for v in value]
    return _wire_object(value)


def _wire_object(value: Any) -> Any:
    """`wire` for what is neither a JSON scalar nor a container (a UUID too goes by `str`)."""
    if isinstance(value, BaseModel):
        return wire(value.model_dump())
    if type(value).__name__ == "Send" and hasattr(value, "node"):
        return {"node": value.node, "args": wire(value.arg)}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: wire(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, datetime.datetime | datetime.date):
        return value.isoformat()
    if isinstance(value, BaseException):
        return {"error": type(value).__name__, "message": str(value)}
    return str(value)


def message_data(message: BaseMessage) -> dict[str, Any]:
    """A message's set fields only, as the CLI shows it."""
    data = message.model_dump(include=set(MESSAGE_FIELDS))
    return {k: v for k, v in data.items() if v not in (None, [], {})}


def jsonable(value: Any) -> Any:
    """Messages as their set fields only, pydantic models dumped: the CLI's compact view."""
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
