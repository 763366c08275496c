"""Ending a run: the state update and the trace event every stop shares."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig

from graphwright.nodes.deps import AgentDeps
from graphwright.nodes.state import AgentState, StopReason
from graphwright.nodes.stops import partial_answer
from graphwright.nodes.tracing import fence_of, run_of, thread_of


def finish(
    state: AgentState,
    deps: AgentDeps,
    config: RunnableConfig,
    reason: StopReason,
    *,
    answer: str | None = None,
    detail: str = "",
) -> dict[str, Any]:
    """Record the stop reason and the answer (partial when the run did not answer)."""
    text = answer if answer is not None else partial_answer(state, reason, detail)
    deps.trace.emit(
        thread_of(config),
        "stop",
        fence=fence_of(config),
        run_id=run_of(config),
        step=state.get("model_calls") or 0,
        stop_reason=reason,
        answer=text,
    )
    update: dict[str, Any] = {"stop_reason": reason, "answer": text, "proposed": []}
    if answer is None:
        # An answer message without tool calls keeps the history valid for a follow-up turn.
        update["messages"] = [AIMessage(text, name="graphwright")]
    return update
