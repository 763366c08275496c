"""A thread's values as runs return them: the state, with `__interrupt__` when it waits."""

from __future__ import annotations

from typing import Any

from graphwright.native import output_of
from graphwright.orchestrator import Orchestrator
from graphwright.serialize import wire


def final_values(orch: Orchestrator, thread_id: str) -> Any:
    """A thread's values as the output schema shows them ({} before any run)."""
    meta = orch.meta(thread_id)
    if not meta.get("graph"):
        return {}
    return values_of(orch.compiled(meta["graph"]), orch.snapshot(thread_id))


def values_of(graph: Any, snap: Any) -> Any:
    """The values of the thread's state `snap` under `graph`'s output schema."""
    values = wire(output_of(graph, snap.values))  # the output schema's view
    interrupts = [wire(i) for t in snap.tasks for i in t.interrupts]
    if interrupts and isinstance(values, dict):
        values["__interrupt__"] = interrupts
    return values
