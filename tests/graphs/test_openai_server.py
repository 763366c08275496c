"""The scripted server speaks enough of the OpenAI API for the real ChatOpenAI client."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from langchain_openai import ChatOpenAI, OpenAIEmbeddings
from pydantic import SecretStr

from graphwright.testing.scripted_embeddings import embeddings_answer
from graphwright.testing.scripted_openai import Reply, ScriptedOpenAI, call
from graphwright.testing.until import scaled


@pytest.fixture
def scripted() -> Iterator[ScriptedOpenAI]:
    server = ScriptedOpenAI()
    yield server
    server.close()


def _model(server: ScriptedOpenAI) -> ChatOpenAI:
    return ChatOpenAI(
        model="scripted-1",
        base_url=server.base_url,
        api_key="test-key",
        max_retries=0,
        timeout=scaled(10),
    )


def test_chat_openai_gets_tool_calls_and_usage_over_http(scripted: ScriptedOpenAI) -> None:
    scripted.load(
        Reply(tool_calls=[call("get_order", {"order_id": "A1001"}, "call_1")]),
        Reply(content="A1001 派送中", prompt_tokens=80, completion_tokens=5),
    )
    model = _model(scripted)
    first = model.invoke("A1001 到哪了？")
    assert first.tool_calls == [
        {"name": "get_order", "args": {"order_id": "A1001"}, "id": "call_1", "type": "tool_call"}
    ]
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


def test_a_tool_call_without_its_answer_is_refused_with_400_as_the_real_api_does(
    scripted: ScriptedOpenAI,
) -> None:
    import openai
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    calls = [{"name": "get_order", "args": {"order_id": f"A100{i}"}, "id": f"c{i}"} for i in (1, 2)]
    dangling = [
        HumanMessage("A1001 和 A1002？"),
        AIMessage("", tool_calls=calls),
        ToolMessage("{}", tool_call_id="c1"),
        HumanMessage("然后呢？"),
    ]
    with pytest.raises(openai.BadRequestError, match="c2"):
        _model(scripted).invoke(dangling)
    orphan = [HumanMessage("hi"), ToolMessage("{}", tool_call_id="nobody")]
    with pytest.raises(openai.BadRequestError, match="preceeding message with 'tool_calls'"):
        _model(scripted).invoke(orphan)
    assert len(scripted.rejected) == 2
    scripted.rejected.clear()
    scripted.assert_done()


def test_streaming_sends_the_reply_in_chunks_with_usage_last(scripted: ScriptedOpenAI) -> None:
    scripted.load(
        Reply(content="订单 A1001 正在派送中。", chunks=4, prompt_tokens=70, completion_tokens=9),
        Reply(tool_calls=[call("get_order", {"order_id": "A1001"}, "call_9")]),
    )
    model = ChatOpenAI(
        model="scripted-1",
        base_url=scripted.base_url,
        api_key="k",
        max_retries=0,
        timeout=scaled(10),
        stream_usage=True,
    )
    chunks = list(model.stream("A1001?"))
    text = [c.content for c in chunks if c.content]
    assert len(text) == 4 and "".join(text) == "订单 A1001 正在派送中。"  # type: ignore[arg-type]
    total = chunks[0]
    for c in chunks[1:]:
        total = total + c
    assert total.usage_metadata is not None and total.usage_metadata["total_tokens"] == 79
    assert scripted.requests[0]["stream"] is True
    assert scripted.requests[0]["stream_options"] == {"include_usage": True}
    merged = None
    for c in model.stream("again"):
        merged = c if merged is None else merged + c
    assert merged is not None and merged.tool_calls[0]["args"] == {"order_id": "A1001"}  # type: ignore[attr-defined]
    scripted.assert_done()


def test_json_schema_replies_are_served_or_refused_for_the_fallback() -> None:
    from pydantic import BaseModel

    class OrderId(BaseModel):
        order_id: str | None

    for supports in (True, False):
        server = ScriptedOpenAI(json_schema=supports)
        server.load(Reply(content='{"order_id": "A1001"}'))
        structured = _model(server).with_structured_output(OrderId, method="json_schema")
        if supports:
            assert structured.invoke("a 1001") == OrderId(order_id="A1001")
            assert server.requests[0]["response_format"]["type"] == "json_schema"
            server.assert_done()
        else:
            with pytest.raises(Exception, match="json_schema is not supported"):
                structured.invoke("a 1001")
            assert len(server.rejected) == 1
        server.close()


def test_embeddings_are_deterministic_vectors_a_store_search_can_rank(
    scripted: ScriptedOpenAI,
) -> None:
    """LangGraph's memory template indexes its store with `openai:text-embedding-3-small`;
    the scripted server answers `/v1/embeddings` (floats or base64, strings or token
    ids), so such a store runs offline and its search finds the related text first."""
    embedder = OpenAIEmbeddings(
        model="text-embedding-3-small",
        base_url=scripted.base_url,
        api_key=SecretStr("test-key"),
        max_retries=0,
        check_embedding_ctx_length=False,
    )
    tea, owls, tea_again = embedder.embed_documents(
        ["Li likes tea", "owls hunt at night", "Li likes tea"]
    )
    query = embedder.embed_query("what does Li like? tea?")
    assert len(tea) == 1536 and tea == tea_again

    def score(v: list[float]) -> float:
        return sum(a * b for a, b in zip(query, v, strict=True))

    assert score(tea) > score(owls)
    assert len(scripted.embedding_requests) == 2 and not scripted.requests
    tokens = embeddings_answer({"input": [[1, 2, 3]], "dimensions": 8})
    assert tokens[0] == 200 and len(tokens[1]["data"][0]["embedding"]) == 8
    assert embeddings_answer({"input": [{"no": 1}]})[1]["error"]["param"] == "input"


def test_a_request_cut_short_by_its_client_is_dropped_quietly(
    scripted: ScriptedOpenAI, capfd: pytest.CaptureFixture[str]
) -> None:
    """A client killed mid-request (a crash campaign's) leaves no traceback; the next is served."""
    host, port = scripted._http.server_address[:2]
    with socket.create_connection((str(host), int(port))) as cut:
        cut.sendall(b'POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 100\r\n\r\n{"mod')
    scripted.load(Reply(content="still here"))
    model = ChatOpenAI(base_url=scripted.base_url, api_key=SecretStr("test"), model="scripted")
    assert model.invoke("hi").content == "still here"
    assert "Traceback" not in capfd.readouterr().err
