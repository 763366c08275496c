"""LangGraph stream chunks as the Agent Server's SSE events: the names and payloads
``langgraph-sdk`` expects per stream mode (``values``, ``updates``, ``messages``,
``messages-tuple``, ``custom``, ``debug``, ``tasks``, ``checkpoints``), with
``mode|namespace`` names for subgraphs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from langchain_core.messages import BaseMessage, BaseMessageChunk, message_chunk_to_message
from langgraph.types import StreamMode
from pydantic import BaseModel

NATIVE = ("values", "updates", "custom", "debug", "tasks", "checkpoints", "messages")


def wire(value: Any) -> Any:
    """JSON data as the reference serialises it: messages and models by all their fields."""
    if isinstance(value, BaseMessage | BaseModel):
        return wire(value.model_dump())
    if isinstance(value, dict):
        return {str(k): wire(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [wire(v) for v in value]
    if type(value).__name__ == "Interrupt" and hasattr(value, "value"):
        return {"value": wire(value.value), "id": value.id}
    if type(value).__name__ == "Send" and hasattr(value, "node"):
        return {"node": value.node, "arg": wire(value.arg)}
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


def graph_modes(requested: Sequence[str]) -> list[StreamMode]:
    """The LangGraph stream modes a run asks for to produce the requested events."""
    modes = {"messages" if m == "messages-tuple" else m for m in requested} & set(NATIVE)
    modes.add("updates")  # interrupts, and the step record, come from updates
    return cast("list[StreamMode]", sorted(modes))


class Framer:
    """Turns one run's chunks into ``(event, data)`` pairs; keeps partial messages."""

    def __init__(self, requested: Sequence[str], subgraphs: bool) -> None:
        self.requested = set(requested)
        self.subgraphs = subgraphs
        self.partial: dict[str, BaseMessage] = {}

    def name(self, mode: str, ns: Sequence[str]) -> str:
        return f"{mode}|{'|'.join(ns)}" if self.subgraphs and ns else mode

    def frames(self, ns: Sequence[str], mode: str, chunk: Any) -> list[tuple[str, Any]]:
        if mode == "messages":
            return self.messages(ns, chunk)
        if mode in self.requested:
            return [(self.name(mode, ns), wire(chunk))]
        return []

    def messages(self, ns: Sequence[str], chunk: Any) -> list[tuple[str, Any]]:
        message, meta = chunk
        if "messages-tuple" in self.requested:
            return [(self.name("messages", ns), [wire(message), wire(meta)])]
        if "messages" not in self.requested or not isinstance(message, BaseMessage):
            return []
        out: list[tuple[str, Any]] = []
        key = message.id or ""
        if key in self.partial:
            self.partial[key] = self.partial[key] + message  # type: ignore[assignment]  # chunks add up to a chunk
        else:
            self.partial[key] = message
            out.append(("messages/metadata", {key: {"metadata": wire(meta)}}))
        whole = self.partial[key]
        if isinstance(message, BaseMessageChunk):
            out.append(("messages/partial", [wire(whole)]))
        else:
            out.append(("messages/complete", [wire(message_chunk_to_message(whole))]))
        return out


def error_data(exc: BaseException) -> dict[str, str]:
    return {"error": type(exc).__name__, "message": str(exc)}
