"""Token streaming: `stream(mode="messages")` yields the model's chunks with their node and run,
from ChatOpenAI streaming over SSE and from the offline model; the CLI prints them live."""

from __future__ import annotations

import asyncio
import os
import pty
import select
import subprocess
import sys
import threading
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from graphwright import Orchestrator
from graphwright.nodes.compact import HANDOFF_PROMPT
from graphwright.nodes.deps import Limits
from graphwright.results import StepEvent
from graphwright.settings import Settings
from graphwright.testing.scripted_openai import Reply, ScriptedOpenAI, call
from graphwright.testing.until import scaled

# Slow: the CLI in its own process printing a model stream as it comes
pytestmark = pytest.mark.slow

ANSWER = "订单 A1001 已发货，物流单号 SF1001，正在派送中。"


def chat_model(server: ScriptedOpenAI) -> ChatOpenAI:
    return ChatOpenAI(
        model="scripted",
        base_url=server.base_url,
        api_key=SecretStr("k"),
        max_retries=0,
        timeout=scaled(10),
        stream_usage=True,
    )


def by_message(events: list[StepEvent]) -> dict[str, list[StepEvent]]:
    out: dict[str, list[StepEvent]] = defaultdict(list)
    for e in events:
        if e.kind == "token":
            out[str(e.message_id)].append(e)
    return out


def script_order(server: ScriptedOpenAI) -> None:
    server.load(
        Reply(tool_calls=[call("get_order", {"order_id": "A1001"}, "c1")]),
        Reply(tool_calls=[call("get_tracking", {"tracking_no": "SF1001"}, "c2")]),
        Reply(content=ANSWER, chunks=5),
    )


def test_chat_openai_tokens_arrive_in_chunks_with_their_node_and_run(
    settings: Settings,
    scripted: ScriptedOpenAI,
) -> None:
    script_order(scripted)
    orch = Orchestrator(settings=settings, model=chat_model(scripted))
    events = list(orch.stream("agent", "订单 A1001 到哪了？", mode="messages"))
    result = events[-1].result
    assert result is not None and result.status == "completed"
    replies = by_message(events)
    assert len(replies) == 1  # tool-call replies carry no text
    (chunks,) = replies.values()
    assert len(chunks) == 5 and "".join(c.text or "" for c in chunks) == ANSWER
    assert {(c.node, c.run_id) for c in chunks} == {("plan", result.run_id)}
    kinds = [e.kind for e in events]
    assert kinds.index("token") < max(i for i, e in enumerate(events) if e.node == "plan")
    assert all(
        body["stream"] and body["stream_options"] == {"include_usage": True}
        for body in scripted.requests
    )
    assert result.usage.tokens == scripted.usage_total()  # usage survives streaming
    scripted.assert_done()
    orch.client.close()


def test_the_offline_model_streams_its_reply_in_chunks(orch: Orchestrator) -> None:
    events = list(orch.stream("agent", "订单 A1001 到哪了？", mode="messages"))
    replies = by_message(events)
    assert replies and all(len(chunks) > 1 for chunks in replies.values())
    text = "".join(e.text or "" for e in next(iter(replies.values())))
    assert text == events[-1].result.answer  # type: ignore[union-attr]


def test_the_async_twin_streams_the_same_tokens(orch: Orchestrator) -> None:
    async def collect() -> list[StepEvent]:
        return [
            e async for e in orch.astream("orchestrator", "订单 A1001 到哪了？", mode="messages")
        ]

    events = asyncio.run(collect())
    tokens = [e for e in events if e.kind == "token"]
    assert {e.node for e in tokens} == {"plan", "synthesize"}  # the split's JSON is not streamed
    assert any(e.namespace and e.namespace[0].startswith("order_desk") for e in tokens)
    assert events[-1].result is not None and events[-1].result.status == "completed"


def test_steps_mode_yields_no_tokens(orch: Orchestrator) -> None:
    assert not [e for e in orch.stream("agent", "1 + 2 * 3") if e.kind == "token"]


def test_usage_with_compaction_and_remember_is_the_sum_of_the_servers_usage(
    settings: Settings,
    scripted: ScriptedOpenAI,
) -> None:
    def notes(body: dict[str, Any]) -> Reply:
        return Reply(
            content='{"facts": [], "open_items": []}', prompt_tokens=300, completion_tokens=7
        )

    scripted.respond(HANDOFF_PROMPT[:40], notes)
    scripted.respond(
        "Extract what the user explicitly asked",
        lambda body: Reply(content='{"memories": []}', prompt_tokens=40, completion_tokens=3),
    )
    script_order(scripted)
    orch = Orchestrator(settings=settings, model=chat_model(scripted))
    long_question = "订单 A1001 到哪了？以后都用中文回答。" + "我很着急，请尽快告诉我。" * 12
    result = orch.invoke(
        "agent",
        long_question,
        user_id="u1",
        limits=Limits(input_budget_tokens=256, max_model_calls=8),
    )
    nodes = [e["node"] for e in orch.trace(result.thread_id) if e["kind"] == "model_call"]
    assert "compact" in nodes and "remember" in nodes
    assert result.usage.model_calls == len(scripted.served) == len(nodes)
    assert result.usage.tokens == scripted.usage_total()
    scripted.assert_done()
    orch.client.close()


def test_the_cli_prints_partial_text_while_the_model_is_still_streaming(
    redis_url: str,
    prefix: str,
    scripted: ScriptedOpenAI,
    tmp_path: Path,
) -> None:
    release = threading.Event()
    first, rest = "订单 A1001 已发货，", "正在派送中。"
    scripted.load(
        Reply(tool_calls=[call("get_order", {"order_id": "A1001"}, "c1")]),
        Reply(tool_calls=[call("get_tracking", {"tracking_no": "SF1001"}, "c2")]),
        Reply(content=first + rest, parts=[first, rest], hold=release),
    )
    env = {
        **os.environ,
        "REDIS_URL": redis_url,
        "GRAPHWRIGHT_KEY_PREFIX": prefix,
        "OPENAI_BASE_URL": scripted.base_url,
        "OPENAI_API_KEY": "test-key",
        "COLUMNS": "120",
        "TERM": "xterm",
    }
    main, child = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "graphwright", "run", "agent", "订单 A1001 到哪了？"],
        stdin=child,
        stdout=child,
        stderr=child,
        env=env,
        cwd=tmp_path,
    )
    os.close(child)
    seen = b""
    try:
        seen = read_until(main, first.encode(), seen)
        assert rest.encode() not in seen  # the first half is on screen, the rest not sent yet
        release.set()
        seen = read_until(main, b"completed", seen)
    finally:
        release.set()
        proc.wait(timeout=scaled(60))
        os.close(main)
    assert proc.returncode == 0
    assert (first + rest).encode() in seen
    scripted.assert_done()


def read_until(fd: int, needle: bytes, seen: bytes) -> bytes:
    """Read the pseudo-terminal until `needle` shows up (or the child closes it)."""
    while needle not in seen:
        ready, _, _ = select.select([fd], [], [], 60)
        assert ready, f"no output for 60 s; saw {seen[-500:]!r}"
        try:
            data = os.read(fd, 4096)
        except OSError:
            break
        if not data:
            break
        seen += data
    assert needle in seen, seen[-2000:]
    return seen
