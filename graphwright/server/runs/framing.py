"""LangGraph stream chunks as the Agent Server's SSE events.

The names and payloads `langgraph-sdk` expects per stream mode (`values`, `updates`, `messages`,
`messages-tuple`, `custom`, `debug`, `tasks`, `checkpoints`), with `mode|namespace` names for
subgraphs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from langchain_core.messages import BaseMessage, BaseMessageChunk, message_chunk_to_message
from langgraph.types import StreamMode

from graphwright.serialize import wire

NATIVE = ("values", "updates", "custom", "debug", "tasks", "checkpoints", "messages")


def graph_modes(requested: Sequence[str]) -> list[StreamMode]:
    """The LangGraph stream modes a run asks for to produce the requested events."""
    modes = {"messages" if m == "messages-tuple" else m for m in requested} & set(NATIVE)
    modes.add("updates")  # interrupts, and the step record, come from updates
    return cast("list[StreamMode]", sorted(modes))


class Framer:
    """Turns one run's chunks into `(event, data)` pairs; keeps partial messages."""

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
            data = wire(chunk)
            if mode == "debug" and isinstance(data, dict) and data.get("type") == "checkpoint":
                data["payload"] = debug_checkpoint(data.get("payload") or {})
            return [(self.name(mode, ns), data)]
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
        # the accumulated chunk leaves as the message it adds up to (`type: "ai"`), as the
        # reference sends it; only the event name tells partial from complete
        whole = wire(message_chunk_to_message(self.partial[key]))
        done = not isinstance(message, BaseMessageChunk)
        out.append(("messages/complete" if done else "messages/partial", [whole]))
        return out


def checkpoint_of(config: Any) -> dict[str, Any] | None:
    """The `checkpoint` object of a config: thread, id, namespace (and map when given)."""
    conf = (config or {}).get("configurable") or {} if isinstance(config, dict) else {}
    if not conf.get("thread_id") or not conf.get("checkpoint_id"):
        return None
    out = {"checkpoint_id": conf["checkpoint_id"], "thread_id": conf["thread_id"]}
    if "checkpoint_ns" in conf:
        out["checkpoint_ns"] = conf["checkpoint_ns"] or ""
    if "checkpoint_map" in conf:
        out["checkpoint_map"] = conf["checkpoint_map"]
    return out


def debug_checkpoint(payload: dict[str, Any]) -> dict[str, Any]:
    """A debug `checkpoint` payload as the reference sends it.

    With `checkpoint` and `parent_checkpoint`, and each task's subgraph `state` config as its
    `checkpoint`.
    """
    tasks = []
    for task in payload.get("tasks") or []:
        state = task.get("state") if isinstance(task, dict) else None
        if isinstance(state, dict) and state.get("configurable"):
            task = {
                **{k: v for k, v in task.items() if k != "state"},
                "checkpoint": state["configurable"],
            }
        tasks.append(task)
    return {
        **payload,
        "checkpoint": checkpoint_of(payload.get("config")),
        "parent_checkpoint": checkpoint_of(payload.get("parent_config")),
        "tasks": tasks,
    }


def error_data(exc: BaseException) -> dict[str, str]:
    """An exception as a stream's `error` event data."""
    return {"error": type(exc).__name__, "message": str(exc)}
