"""Structured replies: json_schema output with ChatOpenAI, validated JSON text otherwise, and the
fallback when a server refuses json_schema."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from graphwright.nodes.jsonreply import StructuredReplyError, structured_reply
from graphwright.nodes.order_steps import EXTRACT_PROMPT, Extracted
from graphwright.offline import OfflineChatModel
from graphwright.testing.scripted_openai import Reply, ScriptedOpenAI
from graphwright.testing.until import scaled

ASK = [SystemMessage(EXTRACT_PROMPT), HumanMessage("我的耳机，单号 a 1001")]


def model_for(server: ScriptedOpenAI) -> ChatOpenAI:
    return ChatOpenAI(
        model="scripted",
        base_url=server.base_url,
        api_key=SecretStr("k"),
        max_retries=0,
        timeout=scaled(10),
    )


def test_chat_openai_is_asked_for_json_schema_output(scripted: ScriptedOpenAI) -> None:
    scripted.load(Reply(content='{"order_id": "a 1001"}'))
    parsed, raw = structured_reply(model_for(scripted), Extracted, ASK)
    assert parsed == Extracted(order_id="a 1001") and raw.usage_metadata is not None
    fmt = scripted.requests[0]["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "Extracted"
    scripted.assert_done()


def test_a_server_that_refuses_json_schema_gets_the_prompt_and_its_text_is_parsed() -> None:
    server = ScriptedOpenAI(json_schema=False)
    server.load(
        Reply(content='```json\n{"order_id": "A1001"}\n```'), Reply(content='{"order_id": null}')
    )
    model = model_for(server)
    assert structured_reply(model, Extracted, ASK)[0].order_id == "A1001"
    assert structured_reply(model, Extracted, ASK)[0].order_id is None  # remembered: no second 400
    assert len(server.rejected) == 1 and "response_format" not in server.requests[0]
    server.rejected.clear()
    server.assert_done()
    server.close()


def test_an_invalid_reply_raises_with_the_raw_reply_for_the_trace(scripted: ScriptedOpenAI) -> None:
    scripted.load(Reply(content="not json", prompt_tokens=12))
    with pytest.raises(StructuredReplyError) as caught:
        structured_reply(model_for(scripted), Extracted, ASK)
    assert (
        caught.value.reply is not None and caught.value.reply.usage_metadata["input_tokens"] == 12
    )  # type: ignore[index]
    scripted.assert_done()


def test_a_model_without_json_schema_output_is_parsed_from_text() -> None:
    parsed, raw = structured_reply(OfflineChatModel(), Extracted, ASK, purpose="extract_order")
    assert parsed.order_id == "A1001" and raw.usage_metadata is not None
