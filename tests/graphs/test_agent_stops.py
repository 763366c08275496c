"""Every stop condition ends the run with its stop_reason and a partial answer, never raising."""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel, ConfigDict

from graphwright.graphs.gates import pending_gate
from graphwright.nodes.deps import Limits
from graphwright.testing.scripted_openai import Reply, call
from graphwright.tools.builtin import OrderArgs, build_registry
from graphwright.tools.errors import Unavailable
from graphwright.tools.policy import Policy
from graphwright.tools.registry import ToolRegistry
from graphwright.tools.spec import ToolContext
from tests.support.agent_rig import AgentRig

NOTES_GOAL = "项目笔记里哪个方案提到 Redis？找到其中的预算表达式并计算总和。"


class PageArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    page: int


def slow_pages(delay_s: float) -> ToolRegistry:
    reg = build_registry()

    @reg.tool(PageArgs, name="read_page")
    def read_page(args: PageArgs, ctx: ToolContext) -> str:
        """Read one page of the incident log."""
        time.sleep(delay_s)
        return f"page {args.page}: all quiet"

    return reg


def test_max_steps_stops_with_a_partial_answer(rig: AgentRig) -> None:
    rig.script(
        Reply(tool_calls=[call("search_notes", {"keyword": "Redis"}, "c1")]),
        Reply(tool_calls=[call("calculate", {"expression": "128 * 6 + 320"}, "c2")]),
    )
    out, config = rig.run(rig.build(limits=Limits(max_model_calls=2)), NOTES_GOAL)
    assert out["stop_reason"] == "max_steps"
    assert out["model_calls"] == 2 and len(rig.recorder.prompts) == 2
    assert out["answer"].startswith(
        "Stopped before finishing: the run used its budget of model calls"
    )
    assert "search_notes, calculate" in out["answer"]
    assert [e["stop_reason"] for e in rig.trace(config) if e["kind"] == "stop"] == ["max_steps"]


def test_tool_errors_stop_after_the_budget(rig: AgentRig) -> None:
    reg = ToolRegistry()

    @reg.tool(OrderArgs, name="get_order")
    def get_order(args: OrderArgs, ctx: ToolContext) -> Any:
        """Look up an order (the order service is down)."""
        raise Unavailable("order service is down")

    rig.script(Reply(tool_calls=[call("get_order", {"order_id": "A1001"}, "c1")]))
    out, config = rig.run(
        rig.build(tools=reg, limits=Limits(max_tool_errors=1)), "订单 A1001 到哪了？"
    )
    assert out["stop_reason"] == "tool_errors"
    assert out["tool_errors"] == 1
    assert rig.tool_events(config)[0]["error"]["type"] == "unavailable"


def test_malformed_calls_are_fed_back_and_count_against_the_error_budget(
    scripted_rig: AgentRig,
) -> None:
    rig = scripted_rig
    rig.script(
        Reply(tool_calls=[call("get_order", '{"order_id": "A10', "c1")]),
        Reply(tool_calls=[call("delete_all_orders", {}, "c2")]),
        Reply(tool_calls=[call("get_order", {"order_id": "1001"}, "c3")]),
    )
    out, config = rig.run(rig.build(), "订单 A1001 到哪了？")
    assert out["stop_reason"] == "tool_errors" and out["tool_errors"] == 3
    errors = [e["error"]["type"] for e in rig.tool_events(config)]
    assert errors == ["invalid_arguments", "unknown_tool", "invalid_arguments"]
    fed_back = [str(m.content) for m in rig.recorder.prompts[1] if m.type == "tool"]
    assert "not valid JSON" in fed_back[0]
    assert (
        "no tool named 'delete_all_orders'"
        in [str(m.content) for m in rig.recorder.prompts[2] if m.type == "tool"][-1]
    )


def test_repeated_call_is_warned_then_stopped(scripted_rig: AgentRig) -> None:
    rig = scripted_rig
    same = {"keyword": "Redis"}
    rig.script(*(Reply(tool_calls=[call("search_notes", same, f"c{i}")]) for i in range(3)))
    out, config = rig.run(rig.build(), NOTES_GOAL)
    assert out["stop_reason"] == "repeated_call"
    events = rig.tool_events(config)
    assert [e["ok"] for e in events] == [True, False, False]  # executed once, then blocked
    warning = [str(m.content) for m in rig.recorder.prompts[2] if m.type == "tool"][-1]
    assert "repeated_call" in warning and "Change strategy" in warning


def test_deadline_stops_the_run(rig: AgentRig) -> None:
    rig.script(Reply(tool_calls=[call("read_page", {"page": 1}, "c1")]))
    graph = rig.build(tools=slow_pages(0.3), limits=Limits(deadline_s=0.25))
    out, _ = rig.run(graph, "Read log pages 1 to 3 and tell me how many pages you read.")
    assert out["stop_reason"] == "deadline"
    assert out["model_calls"] == 1


def test_token_budget_stops_the_run(rig: AgentRig) -> None:
    rig.script(
        Reply(
            tool_calls=[call("search_notes", {"keyword": "Redis"}, "c1")],
            prompt_tokens=400,
            completion_tokens=20,
        )
    )
    out, _ = rig.run(rig.build(limits=Limits(token_budget=100)), NOTES_GOAL)
    assert out["stop_reason"] == "token_budget"
    assert out["tokens"] >= 100 and out["model_calls"] == 1


def test_retrying_a_rejected_call_stops_rejected(scripted_rig: AgentRig) -> None:
    from graphwright.graphs.gates import gate_command
    from graphwright.nodes.gate_models import Reject

    rig = scripted_rig
    args = {"to": "li@example.com", "subject": "hi", "body": "hello"}
    rig.script(Reply(tool_calls=[call("send_email", args, "m1")]))
    graph = rig.build()
    _, config = rig.run(graph, "Email li@example.com to say hello.")
    rig.script(Reply(tool_calls=[call("send_email", args, "m2")]))
    out = graph.invoke(gate_command(graph, config, Reject(reason="no"), build_registry()), config)
    assert out["stop_reason"] == "rejected"
    assert "proposed the rejected call send_email again" in out["answer"]
    assert rig.outbox() == []


def test_policy_never_skips_the_gate_only_while_the_run_is_untainted(rig: AgentRig) -> None:
    event = {
        "title": "Design review",
        "start_time": "2026-12-01T10:00",
        "end_time": "2026-12-01T11:00",
    }
    rig.script(
        Reply(tool_calls=[call("get_schedule", {"date": "2026-12-01"}, "c1")]),
        Reply(tool_calls=[call("create_event", event, "c2")]),
        Reply(content="Created 'Design review'."),
    )
    graph = rig.build(policy=Policy(per_tool={"create_event": "never"}))
    out, config = rig.run(graph, 'Schedule "Design review" on 2026-12-01 from 10:00 to 11:00.')
    # A trusted run: the write ran at once, and the gate was never entered.
    assert out["stop_reason"] == "answered" and rig.effects() == {"create_event": 1}
    assert graph.get_state(config).interrupts == ()
    assert not any(e["kind"] == "gate_decision" for e in rig.trace(config))
    if rig.scripted:  # once the run has read untrusted notes, the same policy gates the write
        rig.client.delete(rig.keys.calendar())
        rig.script(
            Reply(tool_calls=[call("search_notes", {"keyword": "会议"}, "n1")]),
            Reply(tool_calls=[call("create_event", event, "n2")]),
        )
        out, config = rig.run(graph, "看看会议纪要，然后安排评审")
        request = pending_gate(graph, config)
        assert request is not None and request.calls[0].tool == "create_event"
        assert rig.effects() == {}
