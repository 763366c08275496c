"""The order-support workflow: code routes on status; the model only extracts and phrases."""

from __future__ import annotations

from typing import Any

import pytest

from graphwright.graphs.order_support import build_order_support_graph, order_input
from graphwright.graphs.registry import RunInput
from graphwright.nodes.order_routing import after_extract, after_lookup
from graphwright.testing.scripted_openai import Reply
from tests.support.agent_rig import AgentRig

PHRASE, EXTRACT = "Phrase the answer", "Extract the order id"


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ({"order_id": "A1001"}, "lookup"),
        ({"order_id": None}, "ask"),
        ({}, "ask"),
    ],
)
def test_after_extract(state: dict[str, Any], expected: str) -> None:
    assert after_extract(state) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ({"order": {"status": "shipped", "tracking_no": "SF1001"}}, "track"),
        ({"order": {"status": "shipped", "tracking_no": None}}, "phrase"),
        ({"order": {"status": "paid", "tracking_no": None}}, "phrase"),
        ({"error": {"type": "not_found"}}, "not_found"),
        ({"error": {"type": "unavailable"}}, "failed"),
    ],
)
def test_after_lookup(state: dict[str, Any], expected: str) -> None:
    assert after_lookup(state) == expected  # type: ignore[arg-type]


def ask(rig: AgentRig, goal: str) -> tuple[dict[str, Any], list[str]]:
    graph = build_order_support_graph(rig.context())
    config = rig.config()
    out = graph.invoke(order_input(RunInput(goal=goal)), config)
    return out, rig.tools_called(config)


def test_shipped_order_looks_up_tracking_and_the_model_only_phrases(rig: AgentRig) -> None:
    rig.lane(PHRASE, Reply(content="订单 A1001 已发货，物流状态：派送中。"))
    out, tools = ask(rig, "订单 A1001 到哪了？")
    assert tools == ["get_order", "get_tracking"]
    assert out["model_calls"] == 1 and "派送中" in out["answer"]
    if rig.server is not None:
        facts = rig.server.lane_requests[PHRASE][0]["messages"][-1]["content"]
        assert "SF1001" in facts and "派送中" in facts


def test_paid_order_never_asks_for_tracking(rig: AgentRig) -> None:
    rig.lane(PHRASE, Reply(content="订单 A1002 已付款，还没有发货。"))
    out, tools = ask(rig, "订单 A1002 发货了吗？")
    assert tools == ["get_order"] and out["model_calls"] == 1 and "已付款" in out["answer"]


def test_unknown_order_and_missing_id_need_no_model(rig: AgentRig) -> None:
    out, tools = ask(rig, "帮我查一下订单 A9999")
    assert (
        tools == ["get_order"] and out["model_calls"] == 0 and "没有找到订单 A9999" in out["answer"]
    )
    out, tools = ask(rig, "我的快递到哪了？")
    assert tools == [] and out["model_calls"] == 0 and "订单号" in out["answer"]


def test_free_form_id_is_extracted_by_the_model(rig: AgentRig) -> None:
    rig.lane(EXTRACT, Reply(content='{"order_id": "a 1001"}'))
    rig.lane(PHRASE, Reply(content="您的订单 A1001 正在派送中。"))
    out, tools = ask(rig, "我上周买的耳机，单号是 a 1001，现在到哪了？")
    assert out["order_id"] == "A1001" and tools == ["get_order", "get_tracking"]
    assert out["model_calls"] == 2 and "派送中" in out["answer"]


def test_order_support_draws_its_fixed_edges(rig: AgentRig) -> None:
    drawn = build_order_support_graph(rig.context()).get_graph()
    edges = {(e.source, e.target, e.conditional) for e in drawn.edges}
    assert ("track", "phrase", False) in edges and ("extract", "ask", True) in edges
    assert ("lookup", "not_found", True) in edges and ("phrase", "__end__", False) in edges
