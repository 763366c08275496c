"""The human gate: exact pending arguments, approve/edit/reject, and refused decisions."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.types import Command

from graphwright.graphs.gates import gate_command, pending_gate
from graphwright.nodes.gate_models import Approve, Edit, GateDecisionError, Reject
from graphwright.testing.scripted_openai import Reply, call
from graphwright.tools.builtin import build_registry
from tests.support.agent_rig import AgentRig

GOAL = 'Schedule "Design review" on 2026-12-01 from 10:00 to 11:00.'
ARGS = {"title": "Design review", "start_time": "2026-12-01T10:00", "end_time": "2026-12-01T11:00"}


def _to_gate(rig: AgentRig) -> tuple[object, dict, dict]:
    rig.script(
        Reply(tool_calls=[call("get_schedule", {"date": "2026-12-01"}, "c1")]),
        Reply(tool_calls=[call("create_event", ARGS, "c2")]),
    )
    graph = rig.build()
    out, config = rig.run(graph, GOAL)
    return graph, out, config


def test_gate_stops_with_the_exact_arguments_and_no_side_effect(rig: AgentRig) -> None:
    graph, out, config = _to_gate(rig)
    request = pending_gate(graph, config)  # type: ignore[arg-type]
    assert request is not None and len(request.calls) == 1
    pending = request.calls[0]
    assert (pending.tool, pending.args, pending.risk) == ("create_event", ARGS, "write")
    assert pending.reason == "writes need approval by default"
    assert out["__interrupt__"][0].value["calls"][0]["digest"] == pending.digest
    assert rig.effects() == {} and rig.calendar() == []


def test_approve_runs_the_write_exactly_once(rig: AgentRig) -> None:
    graph, _, config = _to_gate(rig)
    rig.script(Reply(content="Created 'Design review' on 2026-12-01 10:00-11:00."))
    digest = pending_gate(graph, config).calls[0].digest  # type: ignore[arg-type,union-attr]
    out = graph.invoke(
        gate_command(graph, config, Approve(digest=digest), build_registry()), config
    )  # type: ignore[attr-defined]
    assert out["stop_reason"] == "answered" and "Design review" in out["answer"]
    assert rig.effects() == {"create_event": 1}
    assert [(e["title"], e["start_time"]) for e in rig.calendar()] == [
        ("Design review", "2026-12-01T10:00")
    ]
    # Running the finished thread again does not repeat the effect.
    graph.invoke(None, config)  # type: ignore[attr-defined]
    assert rig.effects() == {"create_event": 1}


def test_edit_runs_the_edited_arguments_and_the_history_shows_them(rig: AgentRig) -> None:
    graph, _, config = _to_gate(rig)
    rig.script(Reply(content="Created 'Design review' on 2026-12-01 14:00-15:00."))
    request = pending_gate(graph, config)  # type: ignore[arg-type]
    edited = {**ARGS, "start_time": "2026-12-01T14:00", "end_time": "2026-12-01T15:00"}
    decision = Edit(digest=request.calls[0].digest, args=edited)  # type: ignore[union-attr]
    out = graph.invoke(gate_command(graph, config, decision, build_registry()), config)  # type: ignore[attr-defined]
    assert out["stop_reason"] == "answered"
    assert [e["start_time"] for e in rig.calendar()] == ["2026-12-01T14:00"]
    assert rig.effects() == {"create_event": 1}
    calls = [
        c
        for m in out["messages"]
        if isinstance(m, AIMessage)
        for c in m.tool_calls
        if c["name"] == "create_event"
    ]
    assert [c["args"] for c in calls] == [edited]


def test_reject_creates_nothing_and_the_answer_says_so(rig: AgentRig) -> None:
    graph, _, config = _to_gate(rig)
    rig.script(
        Reply(
            content="I did not create 'Design review': the reviewer rejected it (room is booked)."
        )
    )
    decision = Reject(reason="room is booked")
    out = graph.invoke(gate_command(graph, config, decision, build_registry()), config)  # type: ignore[attr-defined]
    assert out["stop_reason"] == "answered"
    assert "rejected" in out["answer"] and "room is booked" in out["answer"]
    assert rig.calendar() == [] and rig.effects() == {}
    rejection = [m for m in rig.recorder.prompts[-1] if isinstance(m, ToolMessage)][-1]
    assert "rejected by the reviewer: room is booked" in str(rejection.content)


def test_reject_with_end_run_stops_rejected_without_another_model_call(rig: AgentRig) -> None:
    graph, _, config = _to_gate(rig)
    calls_before = len(rig.recorder.prompts)
    decision = Reject(reason="not this week", end_run=True)
    out = graph.invoke(gate_command(graph, config, decision, build_registry()), config)  # type: ignore[attr-defined]
    assert out["stop_reason"] == "rejected"
    assert "not this week" in out["answer"]
    assert len(rig.recorder.prompts) == calls_before
    assert rig.calendar() == []


def test_a_decision_for_other_arguments_is_refused_and_changes_nothing(rig: AgentRig) -> None:
    graph, _, config = _to_gate(rig)
    before = graph.get_state(config)  # type: ignore[attr-defined]
    with pytest.raises(GateDecisionError, match="made for other arguments"):
        gate_command(graph, config, Approve(digest="0000000000000000"), build_registry())  # type: ignore[arg-type]
    with pytest.raises(GateDecisionError, match="end_time"):
        bad = Edit(
            digest=pending_gate(graph, config).calls[0].digest,  # type: ignore[arg-type,union-attr]
            args={**ARGS, "end_time": "tomorrow"},
        )
        gate_command(graph, config, bad, build_registry())  # type: ignore[arg-type]
    after = graph.get_state(config)  # type: ignore[attr-defined]
    assert after.config == before.config and after.next == ("human_gate",)
    # Sent raw, past the check, the node refuses it too: it asks again, with the error.
    out = graph.invoke(Command(resume=Approve(digest="0000000000000000").model_dump()), config)  # type: ignore[attr-defined]
    assert "made for other arguments" in out["__interrupt__"][0].value["error"]
    assert rig.calendar() == [] and rig.effects() == {}
    rig.script(Reply(content="Created 'Design review'."))
    digest = pending_gate(graph, config).calls[0].digest  # type: ignore[arg-type,union-attr]
    out = graph.invoke(Command(resume=Approve(digest=digest).model_dump()), config)  # type: ignore[attr-defined]
    assert out["stop_reason"] == "answered" and rig.effects() == {"create_event": 1}


def test_several_pending_calls_are_answered_by_a_map_of_call_ids(scripted_rig: AgentRig) -> None:
    rig = scripted_rig
    second = {
        **ARGS,
        "title": "Retro",
        "start_time": "2026-12-01T15:00",
        "end_time": "2026-12-01T16:00",
    }
    rig.script(
        Reply(tool_calls=[call("create_event", ARGS, "e1"), call("create_event", second, "e2")])
    )
    graph = rig.build()
    _, config = rig.run(graph, "Book the design review and the retro on 2026-12-01.")
    request = pending_gate(graph, config)
    assert request is not None and [c.id for c in request.calls] == ["e1", "e2"]
    with pytest.raises(GateDecisionError, match="map of call id"):
        gate_command(graph, config, Approve(digest=request.calls[0].digest), build_registry())
    with pytest.raises(GateDecisionError, match="missing: e2"):
        gate_command(
            graph, config, {"e1": Approve(digest=request.calls[0].digest)}, build_registry()
        )
    rig.script(Reply(content="Booked the design review; the retro was rejected."))
    decision = {"e1": Approve(digest=request.calls[0].digest), "e2": Reject(reason="no retro")}
    out = graph.invoke(gate_command(graph, config, decision, build_registry()), config)
    assert out["stop_reason"] == "answered"
    assert [e["title"] for e in rig.calendar()] == ["Design review"]
