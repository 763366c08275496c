"""Active time: each agent node adds the seconds it ran to `active_s`, which the deadline reads.

Time between steps is not counted: a run waiting at a gate, or a thread whose process
died and was resumed later, costs nothing. A gate node that resumes runs again from
its start, so only the moments after the decision count.
"""

from __future__ import annotations

from typing import Any, Protocol

from langchain_core.runnables import RunnableConfig

from graphwright.nodes.deps import AgentDeps
from graphwright.nodes.state import AgentState


class AgentNode(Protocol):
    """An agent node before its dependencies are bound."""

    def __call__(
        self, state: AgentState, config: RunnableConfig, *, deps: AgentDeps
    ) -> dict[str, Any]: ...


class BoundNode(Protocol):
    """A node as LangGraph calls it."""

    def __call__(self, state: AgentState, config: RunnableConfig) -> dict[str, Any]: ...


def timed(node: AgentNode, deps: AgentDeps) -> BoundNode:
    """`node` bound to `deps`, adding its own running time to `active_s`."""

    def run(state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        started = deps.clock()
        update = node(state, config, deps=deps)
        return {**update, "active_s": (state.get("active_s") or 0.0) + deps.clock() - started}

    run.__name__ = getattr(node, "__name__", "node")
    return run
