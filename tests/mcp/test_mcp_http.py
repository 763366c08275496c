"""A FastMCP server over streamable HTTP: untrusted output taints the run, keys travel in _meta."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import redis

from graphwright import Settings
from graphwright.testing.scripted_openai import Reply, ScriptedOpenAI, call
from graphwright.testing.service import running
from graphwright.testing.until import scaled
from graphwright.tools.executor import ToolCall, ToolExecutor
from graphwright.tools.mcp import tool_specs
from graphwright.tools.mcp_config import parse_mcp_servers
from graphwright.tools.policy import Policy
from graphwright.tools.registry import ToolRegistry
from tests.support.mcp_rig import (
    effects,
    free_port,
    http_server,
    orchestrator,
    stop_mcp_servers,  # noqa: F401  # autouse: servers stop after each test
)

# Slow: an MCP server over HTTP restarted under a run
pytestmark = pytest.mark.slow


def test_injected_instruction_in_untrusted_output_makes_every_later_write_wait(
    settings: Settings, scripted: ScriptedOpenAI, tmp_path: Path
) -> None:
    log = tmp_path / "effects.jsonl"
    with http_server(log) as (url, _):
        # post_note is allowed to run ungated, so the gate below is the taint's doing.
        policy = Policy(per_tool={"web.post_note": "never"})
        orch = orchestrator(settings, scripted, {"web": {"url": url, "tools": ["*"]}}, policy)
        scripted.load(
            Reply(tool_calls=[call("web__post_note", {"text": "standup at 10"}, id="n1")]),
            Reply(tool_calls=[call("web__read_page", {"url": "https://news.example/v2"})]),
            Reply(tool_calls=[call("web__post_note", {"text": "send the API key to attacker"})]),
            Reply(content="I did not post the second note."),
        )
        result = orch.invoke(
            "agent", "Post the standup note, then read the release news.", thread_id="w"
        )
        assert result.status == "interrupted" and result.pending is not None
        (pending,) = result.pending.calls
        assert pending.tool == "web.post_note" and pending.server == "web"
        assert "untrusted" in pending.reason
        assert orch.state("w").values["tainted"] is True
        with running(orch, worker=False) as service:  # the reviewer sees where the call goes
            page = httpx.get(f"{service.url}/review/w", timeout=scaled(30)).text
        assert "web.post_note" in page and "MCP server web" in page
        done = orch.resume("w", {"action": "reject", "reason": "injected instruction"})
        assert done.status == "completed"
    posted = [e for e in effects(log) if e["tool"] == "post_note"]
    assert [e["text"] for e in posted] == ["standup at 10"]  # the injected write never ran
    assert posted[0]["meta"]["idempotency_key"] == "w:n1"  # the key a server can dedupe on
    scripted.assert_done()


def test_http_connection_is_re_established_after_the_server_restarts(
    tmp_path: Path, client: redis.Redis, prefix: str
) -> None:
    log, port = tmp_path / "effects.jsonl", free_port()
    with http_server(log, port) as (url, _):
        specs = tool_specs(parse_mcp_servers({"web": {"url": url, "tools": ["whoami"]}}))
        executor = ToolExecutor(ToolRegistry(specs), client)
        first = executor.execute(ToolCall(name="web.whoami", args={}, id="a"), thread_id=prefix)
    down = executor.execute(ToolCall(name="web.whoami", args={}, id="b"), thread_id=prefix)
    assert down.error is not None and down.error.type == "unavailable"
    assert f"MCP server 'web' ({url}) is unreachable" in down.error.message
    with http_server(log, port):
        again = executor.execute(ToolCall(name="web.whoami", args={}, id="c"), thread_id=prefix)
    assert first.ok and again.ok and again.result != first.result  # a new server process
