"""The trace: one redacted event per model call, tool call and stop, in a Redis stream."""

from __future__ import annotations

import pytest
import redis
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, ConfigDict

from graphwright.checkpoints.redact import MASK, redact
from graphwright.models import make_model
from graphwright.offline import OfflineChatModel
from graphwright.settings import Settings
from graphwright.testing.scripted_openai import Reply, call
from graphwright.tools.builtin import build_registry
from graphwright.tools.spec import ToolContext
from tests.support.agent_rig import AgentRig

SECRET = "sk-live-9f8e7d6c5b4a39281706f5e4d3c2b1a0"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"api_key": "abc"}, {"api_key": MASK}),
        ({"Authorization": "Basic xyz"}, {"Authorization": MASK}),
        ({"nested": [{"db_password": "p"}]}, {"nested": [{"db_password": MASK}]}),
        ({"note": f"use {SECRET} now"}, {"note": f"use {MASK} now"}),
        ({"h": "Bearer abcdefghijklmnop"}, {"h": MASK}),
        ({"url": "redis://user:hunter2@db:6379"}, {"url": f"redis://{MASK}@db:6379"}),
        ({"order_id": "A1001", "n": 3}, {"order_id": "A1001", "n": 3}),
        ({"input_tokens": 12, "refresh_token": "r"}, {"input_tokens": 12, "refresh_token": MASK}),
    ],
)
def test_redact_masks_secret_names_and_credential_shaped_values(
    value: object, expected: object
) -> None:
    assert redact(value) == expected


class LoginArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    user: str
    api_token: str


def test_trace_records_each_step_with_secrets_redacted(rig: AgentRig) -> None:
    reg = build_registry()

    @reg.tool(LoginArgs, name="check_login")
    def check_login(args: LoginArgs, ctx: ToolContext) -> str:
        """Check a login (echoes a key shaped like a credential)."""
        return f"ok for {args.user}, session {SECRET}"

    rig.script(
        Reply(tool_calls=[call("get_order", {"order_id": "A1002"}, "c1")]),
        Reply(content="订单 A1002 已付款。"),
    )
    graph = rig.build(tools=reg)
    out, config = rig.run(graph, "订单 A1002 发货了吗？")
    events = rig.trace(config)
    assert [e["kind"] for e in events] == ["model_call", "tool_call", "model_call", "stop"]
    model_call = events[0]
    assert model_call["node"] == "plan" and model_call["step"] == 1
    assert model_call["input_tokens"] > 0 and model_call["end"] >= model_call["start"]
    assert model_call["model"] == ("scripted" if rig.scripted else "graphwright-offline")
    if rig.scripted:
        assert model_call["request_id"].startswith("chatcmpl-")
    tool = events[1]
    assert (tool["tool"], tool["args"], tool["ok"]) == ("get_order", {"order_id": "A1002"}, True)
    assert "paid" in tool["result"]
    assert events[-1]["stop_reason"] == "answered" and events[-1]["answer"] == out["answer"]

    # A tool whose arguments and result carry secrets: the stream never holds them.
    from graphwright.checkpoints.trace import TraceWriter
    from graphwright.tools.executor import ToolCall, ToolExecutor

    executor = ToolExecutor(reg, rig.client, keys=rig.keys)
    obs = executor.execute(
        ToolCall(name="check_login", args={"user": "li", "api_token": SECRET}, id="x"),
        thread_id="t-secret",
    )
    writer = TraceWriter(rig.client, rig.keys)
    writer.emit(
        "t-secret", "tool_call", args={"user": "li", "api_token": SECRET}, result=obs.result
    )
    raw = b"".join(v for _, f in rig.client.xrange(rig.keys.events("t-secret")) for v in f.values())
    assert SECRET.encode() not in raw and b"li" in raw


def test_model_factory_picks_openai_only_when_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    assert isinstance(make_model(Settings(_env_file=None)), OfflineChatModel)  # type: ignore[call-arg]
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_MODEL", "local-model")
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    model = make_model(settings)
    assert isinstance(model, ChatOpenAI)
    assert model.model_name == "local-model" and model.request_timeout == 60.0
    # graphwright retries, within the run's deadline; the client does not retry as well.
    assert model.max_retries == 0 and settings.limits().model_retries == 2


def test_a_trace_write_with_redis_gone_waits_in_memory_and_is_written_later(
    client: redis.Redis, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    from graphwright.checkpoints.keys import Keys
    from graphwright.checkpoints.trace import TraceWriter

    keys = Keys(prefix=prefix)
    writer = TraceWriter(redis.Redis(port=1, socket_connect_timeout=0.2), keys)
    with caplog.at_level("ERROR", logger="graphwright.checkpoints.trace"):
        assert (
            writer.emit("t1", "tool_call", tool="send_email") == ""
        )  # no exception: the step goes on
    assert "not written yet" in caplog.text
    writer.redis = client  # Redis is back
    writer.emit("t1", "stop")
    assert [e["kind"] for e in TraceWriter(client, keys).read("t1")] == ["tool_call", "stop"]


def test_a_trace_write_of_a_run_that_lost_its_lock_is_refused(
    client: redis.Redis, prefix: str
) -> None:
    from graphwright.checkpoints.errors import LockLostError
    from graphwright.checkpoints.keys import Keys
    from graphwright.checkpoints.trace import TraceWriter

    keys = Keys(prefix=prefix)
    client.set(keys.fence("t1"), 3)
    writer = TraceWriter(client, keys)
    writer.emit("t1", "tool_call", fence=3)
    with pytest.raises(LockLostError):
        writer.emit("t1", "tool_call", fence=2)
    assert len(writer.read("t1")) == 1
