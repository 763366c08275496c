"""The scripted server speaks enough of the OpenAI API for the real ChatOpenAI client."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langchain_openai import ChatOpenAI

from tests.openai_server import Reply, ScriptedOpenAI, call


@pytest.fixture
def scripted() -> Iterator[ScriptedOpenAI]:
    server = ScriptedOpenAI()
    yield server
    server.close()


def _model(server: ScriptedOpenAI) -> ChatOpenAI:
    return ChatOpenAI(model="scripted-1", base_url=server.base_url, api_key="test-key",
                      max_retries=0, timeout=10)


def test_chat_openai_gets_tool_calls_and_usage_over_http(scripted: ScriptedOpenAI) -> None:
    scripted.load(Reply(tool_calls=[call("get_order", {"order_id": "A1001"}, "call_1")]),
                  Reply(content="A1001 派送中", prompt_tokens=80, completion_tokens=5))
    model = _model(scripted)
    first = model.invoke("A1001 到哪了？")
    assert first.tool_calls == [{"name": "get_order", "args": {"order_id": "A1001"},
                                 "id": "call_1", "type": "tool_call"}]
    second = model.invoke("继续")
    assert second.content == "A1001 派送中"
    assert second.usage_metadata is not None and second.usage_metadata["input_tokens"] == 80
    assert [r["messages"][-1]["content"] for r in scripted.requests] == ["A1001 到哪了？", "继续"]
    scripted.assert_done()


def test_malformed_arguments_arrive_as_an_invalid_tool_call(scripted: ScriptedOpenAI) -> None:
    scripted.load(Reply(tool_calls=[call("calculate", '{"expression": "1+', "call_2")]))
    message = _model(scripted).invoke("算一下")
    assert message.tool_calls == []
    assert message.invalid_tool_calls[0]["name"] == "calculate"
    scripted.assert_done()


def test_a_request_beyond_the_script_fails_loudly(scripted: ScriptedOpenAI) -> None:
    with pytest.raises(Exception, match="unexpected request"):
        _model(scripted).invoke("hello")
    with pytest.raises(AssertionError, match="unexpected"):
        scripted.assert_done()
