"""Conversations on one thread: follow-up turns are scoped per turn, and every tool call is
answered on every stop path (the scripted server answers 400 otherwise, as OpenAI does)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel, ConfigDict

from graphwright.graphs.agent import AgentGraph, start_input
from graphwright.graphs.gates import gate_command, pending_gate
from graphwright.nodes.deps import Limits
from graphwright.nodes.gate_models import Approve, Reject
from graphwright.testing.scripted_openai import Reply, call
from graphwright.tools.builtin import build_registry
from graphwright.tools.registry import ToolRegistry
from graphwright.tools.spec import ToolContext
from tests.support.agent_rig import AgentRig, FakeClock, assert_every_call_answered

ORDER = "订单 A1001 到哪了？"
EMAIL_ARGS = {"to": "li@example.com", "subject": "hi", "body": "hello"}


def order_script(rig: AgentRig, turn: int) -> None:
    rig.script(
        Reply(tool_calls=[call("get_order", {"order_id": "A1001"}, f"o{turn}")]),
        Reply(tool_calls=[call("get_tracking", {"tracking_no": "SF1001"}, f"t{turn}")]),
        Reply(content="订单 A1001 已发货，派送中。"),
    )


def test_the_same_question_twice_on_a_thread_runs_its_calls_again(rig: AgentRig) -> None:
    graph, config = rig.build(), rig.config()
    for turn in (1, 2):
        order_script(rig, turn)
        out, _ = rig.run(graph, ORDER, config=config)
        assert out["stop_reason"] == "answered" and "派送中" in out["answer"]
    assert rig.tools_called(config) == ["get_order", "get_tracking"] * 2
    assert [e["ok"] for e in rig.tool_events(config)] == [True] * 4  # no repeat warning
    assert len([m for m in out["messages"] if m.type == "human"]) == 2  # the conversation stays
    assert_every_call_answered(out["messages"])


def test_a_rejection_is_remembered_within_its_turn_only(scripted_rig: AgentRig) -> None:
    rig = scripted_rig
    graph, config = rig.build(), rig.config()
    rig.script(
        Reply(tool_calls=[call("send_email", EMAIL_ARGS, "m1")]),
        Reply(tool_calls=[call("send_email", EMAIL_ARGS, "m2")]),
    )
    rig.run(graph, "Email li@example.com to say hello.", config=config)
    out = graph.invoke(
        gate_command(graph, config, Reject(reason="not now"), build_registry()), config
    )
    assert out["stop_reason"] == "rejected"
    rig.script(Reply(tool_calls=[call("send_email", EMAIL_ARGS, "m3")]))
    rig.run(graph, "Now it is fine: email li@example.com to say hello.", config=config)
    request = pending_gate(graph, config)
    assert request is not None and request.calls[0].id == "m3"  # asked again, not refused
    assert rig.outbox() == []


# --- every stop path leaves each call answered; the follow-up request proves it -------------

Scenario = Callable[[AgentRig], tuple[AgentGraph, RunnableConfig, str]]


def _answered(rig: AgentRig) -> tuple[AgentGraph, RunnableConfig, str]:
    order_script(rig, 1)
    graph, config = rig.build(), rig.config()
    return graph, config, rig.run(graph, ORDER, config=config)[0]["stop_reason"]


def _max_steps(rig: AgentRig) -> tuple[AgentGraph, RunnableConfig, str]:
    rig.script(
        Reply(
            tool_calls=[
                call("get_order", {"order_id": "A1001"}, "a"),
                call("get_order", {"order_id": "A1002"}, "b"),
            ]
        )
    )
    graph, config = rig.build(limits=Limits(max_model_calls=1)), rig.config()
    return graph, config, rig.run(graph, ORDER, config=config)[0]["stop_reason"]


def _tool_errors(rig: AgentRig) -> tuple[AgentGraph, RunnableConfig, str]:
    rig.script(
        Reply(
            tool_calls=[
                call("delete_all_orders", {}, "a"),
                call("get_order", '{"order_id": "A1', "b"),
            ]
        )
    )
    graph, config = rig.build(limits=Limits(max_tool_errors=2)), rig.config()
    return graph, config, rig.run(graph, ORDER, config=config)[0]["stop_reason"]


def _repeated(rig: AgentRig) -> tuple[AgentGraph, RunnableConfig, str]:
    rig.script(
        *(Reply(tool_calls=[call("get_order", {"order_id": "A1001"}, f"r{i}")]) for i in range(3))
    )
    graph, config = rig.build(), rig.config()
    return graph, config, rig.run(graph, ORDER, config=config)[0]["stop_reason"]


def _deadline(rig: AgentRig) -> tuple[AgentGraph, RunnableConfig, str]:
    clock = FakeClock()
    rig.script(
        Reply(
            tool_calls=[call("read_page", {"page": 1}, "p1"), call("read_page", {"page": 2}, "p2")]
        )
    )
    graph, config = (
        rig.build(tools=clocked_pages(clock, 1.0), clock=clock, limits=Limits(deadline_s=1.5)),
        rig.config(),
    )
    return graph, config, rig.run(graph, "Read log pages 1 to 4.", config=config)[0]["stop_reason"]


def _token_budget(rig: AgentRig) -> tuple[AgentGraph, RunnableConfig, str]:
    rig.script(
        Reply(
            tool_calls=[
                call("get_order", {"order_id": "A1001"}, "a"),
                call("get_tracking", {"tracking_no": "SF1001"}, "b"),
            ],
            prompt_tokens=500,
        )
    )
    graph, config = rig.build(limits=Limits(token_budget=100)), rig.config()
    return graph, config, rig.run(graph, ORDER, config=config)[0]["stop_reason"]


def _end_run_in_a_batch_of_three(rig: AgentRig) -> tuple[AgentGraph, RunnableConfig, str]:
    event = {"title": "Review", "start_time": "2026-12-01T10:00", "end_time": "2026-12-01T11:00"}
    rig.script(
        Reply(
            tool_calls=[
                call("get_schedule", {"date": "2026-12-01"}, "s1"),
                call("create_event", event, "e1"),
                call("send_email", EMAIL_ARGS, "m1"),
            ]
        )
    )
    graph, config = rig.build(), rig.config()
    rig.run(graph, "Book the review and tell li@example.com.", config=config)
    request = pending_gate(graph, config)
    assert request is not None and [c.id for c in request.calls] == ["e1", "m1"]
    decision = {
        "e1": Reject(reason="wrong day", end_run=True),
        "m1": Approve(digest=request.calls[1].digest),
    }
    out = graph.invoke(gate_command(graph, config, decision, build_registry()), config)
    assert rig.outbox() == [] and rig.calendar() == [] and rig.tool_events(config) == []
    answers = {m.tool_call_id: str(m.content) for m in out["messages"] if m.type == "tool"}
    assert set(answers) == {"s1", "e1", "m1"} and "wrong day" in answers["e1"]
    assert "not run: the reviewer ended the run" in answers["s1"] + answers["m1"]
    return graph, config, out["stop_reason"]


def _retried_rejection(rig: AgentRig) -> tuple[AgentGraph, RunnableConfig, str]:
    rig.script(
        Reply(tool_calls=[call("send_email", EMAIL_ARGS, "m1")]),
        Reply(
            tool_calls=[
                call("send_email", EMAIL_ARGS, "m2"),
                call("get_order", {"order_id": "A1001"}, "x"),
            ]
        ),
    )
    graph, config = rig.build(), rig.config()
    rig.run(graph, "Email li@example.com to say hello.", config=config)
    out = graph.invoke(gate_command(graph, config, Reject(reason="no"), build_registry()), config)
    return graph, config, out["stop_reason"]


SCENARIOS: dict[str, tuple[Scenario, str]] = {
    "answered": (_answered, "answered"),
    "max_steps": (_max_steps, "max_steps"),
    "tool_errors": (_tool_errors, "tool_errors"),
    "repeated_call": (_repeated, "repeated_call"),
    "deadline": (_deadline, "deadline"),
    "token_budget": (_token_budget, "token_budget"),
    "end_run_batch_of_three": (_end_run_in_a_batch_of_three, "rejected"),
    "retried_rejection": (_retried_rejection, "rejected"),
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_every_stop_path_answers_every_call_and_the_thread_goes_on(
    scripted_rig: AgentRig, name: str
) -> None:
    rig = scripted_rig
    scenario, expected = SCENARIOS[name]
    graph, config, reason = scenario(rig)
    assert reason == expected
    rig.script(Reply(content="还有什么要帮忙的吗？"))
    out, _ = rig.run(graph, "然后呢？", config=config)  # a 400 here would fail the run
    assert out["stop_reason"] == "answered"
    assert_every_call_answered(out["messages"])
    assert rig.server is not None and not rig.server.rejected


# --- active time --------------------------------------------------------------------------


def clocked_pages(clock: FakeClock, seconds: float) -> ToolRegistry:
    """A page reader whose every read takes `seconds` of the fake clock."""
    reg = build_registry()

    @reg.tool(PageArgs, name="read_page")
    def read_page(args: PageArgs, ctx: ToolContext) -> str:
        """Read one page of the incident log."""
        clock.advance(seconds)
        return f"page {args.page}: quiet"

    return reg


def clocked_calendar(clock: FakeClock, seconds: float) -> ToolRegistry:
    """The built-in tools, where reading the schedule and booking each take `seconds`."""
    reg = ToolRegistry()
    for spec in build_registry():
        if spec.name in ("get_schedule", "create_event"):

            def slow(args: Any, ctx: ToolContext, _func: Any = spec.func) -> Any:
                clock.advance(seconds)
                return _func(args, ctx)

            reg.add(dataclasses.replace(spec, func=slow))
        else:
            reg.add(spec)
    return reg


class PageArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    page: int


SCHEDULE = 'Schedule "Design review" on 2026-12-01 from 10:00 to 11:00.'
EVENT = {"title": "Design review", "start_time": "2026-12-01T10:00", "end_time": "2026-12-01T11:00"}


def _to_gate(
    rig: AgentRig, clock: FakeClock, seconds: float, deadline: float
) -> tuple[AgentGraph, RunnableConfig]:
    rig.script(
        Reply(tool_calls=[call("get_schedule", {"date": "2026-12-01"}, "g1")]),
        Reply(tool_calls=[call("create_event", EVENT, "c1")]),
    )
    graph = rig.build(
        tools=clocked_calendar(clock, seconds), clock=clock, limits=Limits(deadline_s=deadline)
    )
    _, config = rig.run(graph, SCHEDULE)
    assert pending_gate(graph, config) is not None
    return graph, config


def _approve(graph: AgentGraph, config: RunnableConfig) -> dict[str, Any]:
    digest = pending_gate(graph, config).calls[0].digest  # type: ignore[union-attr]
    return graph.invoke(
        gate_command(graph, config, Approve(digest=digest), build_registry()), config
    )


def test_a_gate_wait_does_not_count_toward_the_deadline(rig: AgentRig) -> None:
    clock = FakeClock()
    graph, config = _to_gate(rig, clock, 0.0, deadline=1.5)
    clock.advance(2.0)  # the reviewer takes 2 s (and it would be the same for 2 days)
    rig.script(Reply(content="Created 'Design review'."))
    out = _approve(graph, config)
    assert out["stop_reason"] == "answered" and rig.effects() == {"create_event": 1}
    assert out["active_s"] < 1.5


def test_work_before_the_gate_counts_toward_the_deadline(rig: AgentRig) -> None:
    clock = FakeClock()
    graph, config = _to_gate(rig, clock, 1.0, deadline=1.5)  # reading the schedule took 1 s
    clock.advance(600.0)
    out = _approve(graph, config)  # booking takes 1 s more: 2 s of active time in all
    assert out["stop_reason"] == "deadline" and rig.effects() == {"create_event": 1}
    assert out["active_s"] == pytest.approx(2.0, abs=0.1)


def test_time_while_the_process_was_dead_does_not_count(rig: AgentRig) -> None:
    clock = FakeClock()
    order_script(rig, 1)
    graph, config = rig.build(clock=clock, limits=Limits(deadline_s=1.5)), rig.config()
    graph.invoke(start_input(ORDER), config, interrupt_before=["act"])  # as if it died before act
    assert graph.get_state(config).next == ("act",)
    clock.advance(300.0)  # five minutes until someone resumes it
    out = graph.invoke(None, config)
    assert out["stop_reason"] == "answered" and out["active_s"] < 1.5
