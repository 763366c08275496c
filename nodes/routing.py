"""The agent graph's conditional edges: small pure functions of state.

Each returns a `Literal` of node names, so the graph can be validated and drawn;
`"__end__"` is LangGraph's `END` spelled as a literal for the type checker.
"""

from __future__ import annotations

from typing import Literal

from graphwright.nodes.state import AgentState


def after_plan(state: AgentState) -> Literal["act", "human_gate", "__end__"]:
    """Stop, answer, ask a human, or run the proposed calls."""
    proposed = state.get("proposed") or []
    if state.get("stop_reason") or not proposed:
        return "__end__"  # LangGraph's END
    if any(call["action"] == "needs_approval" for call in proposed):
        return "human_gate"
    return "act"


def after_gate(state: AgentState) -> Literal["act", "plan", "observe"]:
    """Run what was approved; with every call rejected, let the model read the rejections.

    A reviewer who ended the run goes to observe, which records the stop.
    """
    if state.get("end_requested"):
        return "observe"
    if state.get("proposed"):  # approved calls, and refusals act turns into observations
        return "act"
    return "plan"


def after_act(state: AgentState) -> Literal["human_gate", "observe"]:
    """A write whose outcome is unknown, or a call without its approval, goes to a reviewer.

    Everything else is observed.
    """
    if any(
        call["action"] in ("outcome_unknown", "needs_approval")
        for call in state.get("proposed") or []
    ):
        return "human_gate"
    return "observe"


def after_observe(state: AgentState) -> Literal["plan", "compact", "__end__"]:
    """Stop on a stop condition; compact when the context is past its trigger."""
    if state.get("stop_reason"):
        return "__end__"  # LangGraph's END
    if state.get("needs_compaction"):
        return "compact"
    return "plan"
