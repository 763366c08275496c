"""The assistant a run names: resolved (an assistant id or a graph name), its config and
context laid under the run's own, and the run's thread stamped with it."""

from __future__ import annotations

from typing import Any

from graphwright.orchestrator import Orchestrator
from graphwright.server.assistants_store import AssistantStore
from graphwright.server.schemas import RunCreate
from graphwright.server.threads_api import Threads


def resolve(orch: Orchestrator, body: RunCreate) -> dict[str, Any]:
    """The run's assistant; ``body`` then names its graph and carries its config and context
    (the run's own values win), with ``graph_id`` and ``assistant_id`` in ``configurable``
    as the reference puts them."""
    assistant = AssistantStore.of(orch).get(body.assistant_id)
    orch.graphs.get(assistant["graph_id"])
    body.assistant_id = assistant["graph_id"]
    mine = dict(body.config or {})
    base = dict(assistant.get("config") or {})
    configurable = {**(base.pop("configurable", None) or {}), **(mine.pop("configurable", None) or {}),
                    "graph_id": assistant["graph_id"], "assistant_id": assistant["assistant_id"]}
    metadata = {**(assistant.get("metadata") or {}), **(base.pop("metadata", None) or {}),
                **(mine.pop("metadata", None) or {})}  # the reference's run metadata starts from the assistant's
    body.config = {**base, **mine, "configurable": configurable, "metadata": metadata}
    if assistant.get("context") or body.context:
        body.context = {**(assistant.get("context") or {}), **(body.context or {})}
    return assistant


def stamp(orch: Orchestrator, thread_id: str, assistant: dict[str, Any]) -> None:
    """Note the run's graph and assistant on its thread (chat UIs list threads by them)."""
    Threads(orch).stamp(thread_id, assistant["graph_id"], assistant["assistant_id"])
