"""Table tests covering every branch of the agent graph's edge functions."""

from __future__ import annotations

from typing import Any

import pytest

from graphwright.nodes.routing import after_gate, after_observe, after_plan
from graphwright.nodes.state import AgentState, ProposedCall


def _call(action: str) -> ProposedCall:
    return {"id": "c", "name": "t", "args": {}, "action": action, "reason": ""}  # type: ignore[typeddict-item]


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ({}, "__end__"),
        ({"proposed": []}, "__end__"),
        ({"proposed": [_call("run")], "stop_reason": "max_steps"}, "__end__"),
        ({"proposed": [_call("run")]}, "act"),
        ({"proposed": [_call("run"), _call("refuse")]}, "act"),
        ({"proposed": [_call("run"), _call("needs_approval")]}, "human_gate"),
        ({"proposed": [_call("needs_approval")]}, "human_gate"),
    ],
)
def test_after_plan(state: dict[str, Any], expected: str) -> None:
    assert after_plan(AgentState(**state)) == expected


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ({"proposed": [_call("run")]}, "act"),
        ({"proposed": [_call("refuse"), _call("run")]}, "act"),
        ({"proposed": [_call("refuse")]}, "act"),
        ({}, "plan"),
        ({"proposed": [_call("run")], "end_requested": "reviewer ended it"}, "observe"),
    ],
)
def test_after_gate(state: dict[str, Any], expected: str) -> None:
    assert after_gate(AgentState(**state)) == expected


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ({}, "plan"),
        ({"needs_compaction": True}, "compact"),
        ({"needs_compaction": True, "stop_reason": "deadline"}, "__end__"),
        ({"stop_reason": "tool_errors"}, "__end__"),
    ],
)
def test_after_observe(state: dict[str, Any], expected: str) -> None:
    assert after_observe(AgentState(**state)) == expected


def test_end_literal_is_langgraphs_end() -> None:
    from langgraph.graph import END

    assert END == "__end__"
