"""Deterministic stop conditions and the partial answer a stopped run ends with."""

from __future__ import annotations

from collections.abc import Sequence

from graphwright.nodes.deps import Limits
from graphwright.nodes.state import AgentState, CallRecord, StopReason, turn_calls

EXPLAIN: dict[StopReason, str] = {
    "answered": "the model answered",
    "max_steps": "the run used its budget of model calls",
    "tool_errors": "too many tool calls failed",
    "repeated_call": "the model kept repeating the same tool call with the same arguments",
    "deadline": "the run passed its deadline (active time)",
    "token_budget": "the run used its token budget",
    "rejected": "a reviewer rejected a call the run needed",
}


def repeat_run(log: Sequence[CallRecord], name: str, canonical_args: str) -> int:
    """How many of the latest calls in a row were this exact call."""
    count = 0
    for record in reversed(log):
        if record["name"] != name or record["canonical_args"] != canonical_args:
            break
        count += 1
    return count


def budget_stop(state: AgentState, limits: Limits) -> StopReason | None:
    """Budgets checked before every model call and after every tool step.

    The deadline counts active time (`active_s`): seconds spent running this turn's
    steps, not time waiting at a gate or while no process was running the thread.
    """
    if (state.get("tokens") or 0) >= limits.token_budget:
        return "token_budget"
    if (state.get("active_s") or 0.0) > limits.deadline_s:
        return "deadline"
    if (state.get("model_calls") or 0) >= limits.max_model_calls:
        return "max_steps"
    return None


def outcome_stop(state: AgentState, limits: Limits) -> StopReason | None:
    """Stops that depend on what the tools returned."""
    log = turn_calls(state)
    if state.get("end_requested"):
        return "rejected"
    if log and repeat_run(log, log[-1]["name"], log[-1]["canonical_args"]) >= 3:
        return "repeated_call"
    if (state.get("tool_errors") or 0) >= limits.max_tool_errors:
        return "tool_errors"
    return None


def partial_answer(state: AgentState, reason: StopReason, detail: str = "") -> str:
    """What a stopped run says: why it stopped and what it had so far; never an exception."""
    text = f"Stopped before finishing: {EXPLAIN[reason]}"
    text += f" ({detail})." if detail else "."
    done = [r for r in turn_calls(state) if r["outcome"] == "ok"]
    if done:
        text += f" Completed tool calls: {', '.join(r['name'] for r in done)}."
    if state.get("plan_notes"):
        text += f" Last note from the model: {state['plan_notes']}"
    return text
