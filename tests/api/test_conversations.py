"""Five turns on one thread: through the CLI against the scripted server, through the Python
API, and on the orchestrator and order-support graphs; each turn's tool calls run."""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner

from graphwright import Orchestrator
from graphwright.cli import app
from graphwright.testing.scripted_openai import Reply, ScriptedOpenAI, call
from graphwright.testing.until import scaled

# (question, the calls its turn must make, text the answer must contain)
TURNS = [
    ("订单 A1001 到哪了？", [("get_order", "A1001"), ("get_tracking", "SF1001")], "派送中"),
    ("那 A1002 呢？", [("get_order", "A1002")], "已付款"),
    ("订单 A1001 到哪了？", [("get_order", "A1001"), ("get_tracking", "SF1001")], "派送中"),
    ("帮我查一下订单 A9999", [("get_order", "A9999")], "没有找到"),
    (
        "最后再看一次订单 A1001 到哪了？",
        [("get_order", "A1001"), ("get_tracking", "SF1001")],
        "派送中",
    ),
]


def calls_per_turn(trace: list[dict[str, Any]]) -> list[list[tuple[str, str]]]:
    """The executed tool calls of each run on the thread, split at its run_start events."""
    turns: list[list[tuple[str, str]]] = []
    for e in trace:
        if e["kind"] == "run_start":
            turns.append([])
        elif e["kind"] == "tool_call" and e["ok"] is not None:
            turns[-1].append((e["tool"], next(iter(e["args"].values()))))
    return turns


def script_turn(server: ScriptedOpenAI, n: int, calls: list[tuple[str, str]], answer: str) -> None:
    keys = {"get_order": "order_id", "get_tracking": "tracking_no"}
    for i, (tool, value) in enumerate(calls):
        server.load(Reply(tool_calls=[call(tool, {keys[tool]: value}, f"turn{n}_{i}")]))
    server.load(Reply(content=f"第 {n} 轮：{answer}。", chunks=3))


def test_five_turns_through_the_cli_against_the_scripted_server(
    redis_url: str,
    prefix: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: object,
    scripted: ScriptedOpenAI,
) -> None:
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("GRAPHWRIGHT_KEY_PREFIX", prefix)
    monkeypatch.setenv("OPENAI_BASE_URL", scripted.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.delenv("GRAPHWRIGHT_GRAPHS", raising=False)
    monkeypatch.chdir(str(tmp_path))
    cli = CliRunner()
    for n, (question, calls, answer) in enumerate(TURNS, 1):
        script_turn(scripted, n, calls, answer)
        result = cli.invoke(app, ["run", "agent", question, "--thread", "chat"])
        assert result.exit_code == 0, result.stdout + result.stderr
        assert "completed (answered) thread chat" in result.stdout
        assert f"第 {n} 轮：{answer}。" in result.stdout
    scripted.assert_done()
    assert all(body["stream"] for body in scripted.requests)  # the CLI streams the model's tokens
    orch = Orchestrator.from_env()
    assert calls_per_turn(orch.trace("chat")) == [calls for _, calls, _ in TURNS]
    humans = [m for m in orch.state("chat").values["messages"] if m["type"] == "human"]
    assert [m["content"] for m in humans] == [q for q, _, _ in TURNS]
    # The last request carried the whole conversation, and the server accepted it.
    assert sum(m["role"] == "user" for m in scripted.requests[-1]["messages"]) == 5


@pytest.mark.parametrize("graph", ["agent", "orchestrator", "order_support"])
def test_five_turns_through_the_python_api(orch: Orchestrator, graph: str) -> None:
    for question, _, answer in TURNS:
        result = orch.invoke(graph, question, thread_id="chat")
        assert result.status == "completed" and answer in (result.answer or ""), result
    assert calls_per_turn(orch.trace("chat")) == [calls for _, calls, _ in TURNS]


def test_a_follow_up_without_an_id_is_about_the_previous_order(orch: Orchestrator) -> None:
    first = orch.invoke("order_support", "订单 A1002 发货了吗？", thread_id="t")
    again = orch.invoke("order_support", "现在发货了吗？", thread_id="t")
    assert "已付款" in (first.answer or "") and "已付款" in (again.answer or "")
    assert calls_per_turn(orch.trace("t")) == [[("get_order", "A1002")]] * 2


def test_the_orchestrator_split_sees_the_earlier_turns(
    scripted: ScriptedOpenAI, settings: Any
) -> None:
    from langchain_openai import ChatOpenAI
    from pydantic import SecretStr

    model = ChatOpenAI(
        model="scripted",
        base_url=scripted.base_url,
        api_key=SecretStr("k"),
        max_retries=0,
        timeout=scaled(10),
        stream_usage=True,
    )
    orch = Orchestrator(settings=settings, model=model)
    split = '{"subtasks": [{"worker": "order_desk", "instructions": "%s"}]}'
    for n, order in enumerate(("A1001", "A1002"), 1):
        scripted.load_for("Split the task", Reply(content=split % f"查订单 {order}"))
        scripted.load_for(
            "You answer order",
            Reply(tool_calls=[call("get_order", {"order_id": order}, f"o{n}")]),
            Reply(content=f"{order} 查到了"),
        )
        scripted.load_for("Write the final answer", Reply(content=f"第 {n} 轮完成"))
        result = orch.invoke("orchestrator", f"订单 {order} 呢？", thread_id="o")
        assert result.status == "completed" and f"{order} 查到了" in (result.answer or "")
    second_split = scripted.lane_requests["Split the task"][1]["messages"][-1]["content"]
    assert "Earlier turns" in second_split and "A1001" in second_split
    assert scripted.lane_requests["Split the task"][0]["response_format"]["type"] == "json_schema"
    scripted.assert_done()
    orch.client.close()
