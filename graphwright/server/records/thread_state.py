"""Thread state over HTTP: state now or at any checkpoint, updates, history, supersteps.

Snapshots are LangGraph's own `StateSnapshot` read through the thread's graph and
graphwright's saver; this module only chooses the config and shapes the answer like
the Agent Server's `ThreadState`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command, StateSnapshot, StateUpdate

from graphwright import run_meta
from graphwright.locking import thread_lock
from graphwright.orchestrator import Orchestrator
from graphwright.serialize import wire
from graphwright.server.runs.framing import checkpoint_of
from graphwright_errors import NotFoundError, UserError

EMPTY_STATE: dict[str, Any] = {
    "values": {},
    "next": [],
    "tasks": [],
    "metadata": None,
    "created_at": None,
    "checkpoint": None,
    "parent_checkpoint": None,
    "interrupts": [],
    "checkpoint_id": None,
    "parent_checkpoint_id": None,
}


def graph_of(orch: Orchestrator, thread_id: str) -> str | None:
    """The graph the thread runs: the one it ran, else `metadata.graph_id`."""
    meta = orch.meta(thread_id)
    if not meta:
        raise NotFoundError(f"Thread with ID {thread_id} not found")
    if meta.get("graph"):
        return meta["graph"]
    graph = json.loads(meta.get("metadata") or "{}").get("graph_id")
    return str(graph) if graph else None


def interrupt_doc(i: Any) -> dict[str, Any]:
    """An interrupt as state reads give it.

    As the checkpoint stores it, without the `response_schema` that runs and streams send.
    """
    return {"value": wire(i.value), "id": i.id}


def snapshot_doc(snap: StateSnapshot) -> dict[str, Any]:
    """A LangGraph snapshot as the Agent Server's `ThreadState`."""
    metadata = dict(snap.metadata or {}) if snap.metadata is not None else None
    if metadata is not None and metadata.get("checkpoint_ns") == "":
        metadata.pop("checkpoint_ns")
    tasks = [
        {
            "id": t.id,
            "name": t.name,
            "path": wire(list(t.path)),
            "error": t.error,
            "interrupts": [interrupt_doc(i) for i in t.interrupts],
            "checkpoint": dict(t.state["configurable"])
            if t.state is not None and not isinstance(t.state, StateSnapshot)
            else None,
            "state": snapshot_doc(t.state) if isinstance(t.state, StateSnapshot) else None,
            "result": wire(t.result),
        }
        for t in snap.tasks
    ]
    parent = snap.parent_config or {}
    return {
        "values": wire(snap.values),
        "next": list(snap.next),
        "tasks": tasks,
        "metadata": wire(metadata),
        "created_at": snap.created_at,
        "checkpoint": checkpoint_of(snap.config),
        "parent_checkpoint": checkpoint_of(snap.parent_config),
        "interrupts": [interrupt_doc(i) for i in snap.interrupts],
        "checkpoint_id": (snap.config or {}).get("configurable", {}).get("checkpoint_id"),
        "parent_checkpoint_id": parent.get("configurable", {}).get("checkpoint_id")
        if parent
        else None,
    }


def _config(thread_id: str, checkpoint: Mapping[str, Any] | None = None) -> RunnableConfig:
    conf: dict[str, Any] = {
        "checkpoint_ns": "",
        **{k: v for k, v in (checkpoint or {}).items() if v is not None},
    }
    conf["thread_id"] = thread_id
    return {"configurable": conf}


def get_state(
    orch: Orchestrator,
    thread_id: str,
    checkpoint: Mapping[str, Any] | None = None,
    *,
    subgraphs: bool = False,
) -> dict[str, Any]:
    """A thread's state as the API answers it (empty where no graph ran on it)."""
    graph = graph_of(orch, thread_id)
    if graph is None:
        return dict(EMPTY_STATE)
    snap = orch.compiled(graph).get_state(_config(thread_id, checkpoint), subgraphs=subgraphs)
    return snapshot_doc(snap)


def _needs_graph(orch: Orchestrator, thread_id: str) -> str:
    graph = graph_of(orch, thread_id)
    if graph is None:
        raise UserError(
            f"Thread '{thread_id}' has no assigned graph ID. Run it once, or set "
            "metadata.graph_id on the thread, before updating its state."
        )
    orch.graphs.get(graph)
    return graph


def update_state(
    orch: Orchestrator,
    thread_id: str,
    values: Any,
    *,
    as_node: str | None = None,
    checkpoint: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Write `values` as if `as_node` had returned them.

    A new checkpoint (a fork when `checkpoint` names an older one).
    """
    graph = _needs_graph(orch, thread_id)
    compiled = orch.compiled(graph)
    with _holding(orch, thread_id) as fence:  # a busy thread is a 409, as in the reference
        config = _config(thread_id, checkpoint)
        # the graph's id in configurable, so its checkpoint's metadata names it as the reference's
        config["configurable"] |= {"graph_id": graph, "gw_fence": fence}
        done = compiled.update_state(config, values, as_node=as_node)
        _settle(orch, thread_id, graph, fence)
    conf = {k: v for k, v in done["configurable"].items() if k != "gw_fence"}
    return {"checkpoint": conf, "configurable": conf, "checkpoint_id": conf.get("checkpoint_id")}


def bulk_update(
    orch: Orchestrator, thread_id: str, supersteps: Sequence[Sequence[Mapping[str, Any]]]
) -> None:
    """Apply supersteps of updates (`threads.create(supersteps=...)`), one checkpoint each."""
    graph = _needs_graph(orch, thread_id)
    steps = [
        [
            StateUpdate(
                Command(**u["command"]) if u.get("command") else u.get("values"),  # type: ignore[arg-type]  # LangGraph applies a Command here too
                u.get("as_node"),
            )
            for u in step
        ]
        for step in supersteps
    ]
    with _holding(orch, thread_id) as fence:
        config = _config(thread_id)
        config["configurable"]["gw_fence"] = fence
        orch.compiled(graph).bulk_update_state(config, steps)
        _settle(orch, thread_id, graph, fence)


@contextmanager
def _holding(orch: Orchestrator, thread_id: str) -> Iterator[int]:
    """The thread's lock for one state update.

    Never in the middle of a run, and its writes fenced like a run's. A thread another process runs
    is ThreadBusyError (HTTP 409).
    """
    with thread_lock(orch.client, orch.keys, thread_id, ttl_s=orch.settings.lock_ttl_s) as lock:
        yield lock.fence


def _settle(orch: Orchestrator, thread_id: str, graph: str, fence: int | None = None) -> None:
    """After a state update the thread runs `graph`.

    With nodes left to run it waits (`interrupted`, as the reference says), else it is idle.
    """
    waiting = bool(orch.compiled(graph).get_state(_config(thread_id)).next)
    run_meta.settled(
        orch.thread_meta, thread_id, fence, "interrupted" if waiting else "completed", graph
    )


def _before(before: Mapping[str, Any] | str | None) -> RunnableConfig | None:
    if before is None:
        return None
    if isinstance(before, str):
        return {"configurable": {"checkpoint_id": before}}
    inner = before.get("configurable") or before
    return {"configurable": {k: v for k, v in inner.items() if v is not None}}


def history(
    orch: Orchestrator,
    thread_id: str,
    *,
    limit: int = 10,
    before: Mapping[str, Any] | str | None = None,
    metadata: Mapping[str, Any] | None = None,
    checkpoint: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """A thread's checkpoints, newest first, as the API answers them."""
    graph = graph_of(orch, thread_id)
    if graph is None:
        return []
    snaps = orch.compiled(graph).get_state_history(
        _config(thread_id, checkpoint),
        filter=dict(metadata) if metadata else None,
        before=_before(before),
        limit=limit,
    )
    return [snapshot_doc(s) for s in snaps]
