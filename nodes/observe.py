"""observe: deterministic bookkeeping after act: errors, taint, budgets, stop reason, compaction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from langchain_core.messages import AnyMessage, ToolMessage
from langchain_core.runnables import RunnableConfig

from graphwright.nodes.deps import AgentDeps
from graphwright.nodes.finish import finish
from graphwright.nodes.prompt import plan_messages
from graphwright.nodes.state import AgentState
from graphwright.nodes.stops import budget_stop, outcome_stop
from graphwright.nodes.tracing import fence_of, thread_of


def latest_observations(messages: Sequence[AnyMessage]) -> list[ToolMessage]:
    """The tool messages that answer the newest tool-calling AI message."""
    out: list[ToolMessage] = []
    for message in reversed(messages):
        if not isinstance(message, ToolMessage):
            break
        out.append(message)
    return out[::-1]


def counts_as_error(message: ToolMessage) -> bool:
    """Failed tool observations count; a reviewer's rejection does not."""
    artifact = message.artifact if isinstance(message.artifact, dict) else {}
    return message.status == "error" and artifact.get("error_type") != "rejected"


def over_trigger(state: AgentState, deps: AgentDeps) -> bool:
    """Whether the next plan request, counted the model's way, passes the compaction trigger."""
    size = deps.count(plan_messages(state, deps.role, deps.rules))
    return size > deps.limits.compact_trigger * deps.limits.input_budget_tokens


def observe(state: AgentState, config: RunnableConfig, *, deps: AgentDeps) -> dict[str, Any]:
    """Count, mark taint, and decide: stop, compact or plan again."""
    fresh = latest_observations(state.get("messages") or [])
    errors = (state.get("tool_errors") or 0) + sum(counts_as_error(m) for m in fresh)
    untrusted = any(
        isinstance(m.artifact, dict)
        and m.artifact.get("ok")
        and m.artifact.get("trust") == "untrusted"
        for m in fresh
    )
    if untrusted:  # kept in Redis, where a caller's state update cannot clear it
        deps.approvals.mark_tainted(thread_of(config), fence=fence_of(config))
    tainted = bool(state.get("tainted")) or untrusted
    update: dict[str, Any] = {"tool_errors": errors, "tainted": tainted}
    merged = cast(AgentState, {**state, **update})
    reason = outcome_stop(merged, deps.limits) or budget_stop(merged, deps.limits)
    if reason:
        detail = merged.get("end_requested") or ""
        return {**update, **finish(merged, deps, config, reason, detail=detail)}
    update["needs_compaction"] = over_trigger(merged, deps)
    return update
