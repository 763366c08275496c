"""Real MCP servers over stdio in agent runs: mcp-server-time, mcp-server-git and a faulty one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import redis

from graphwright import Orchestrator, Settings
from graphwright.checkpoints.keys import Keys
from graphwright.testing.scripted_openai import Reply, ScriptedOpenAI, call
from graphwright.tools.executor import ToolCall, ToolExecutor
from graphwright.tools.mcp import tool_specs
from graphwright.tools.mcp_config import parse_mcp_servers
from graphwright.tools.policy import Policy
from graphwright.tools.records import args_digest
from graphwright.tools.registry import ToolRegistry
from graphwright_errors import ConfigurationError
from tests.support.mcp_rig import (  # noqa: F401  # stop_mcp_servers: autouse
    commits,
    effects,
    faulty_server,
    git_server,
    make_repo,
    orchestrator,
    stop_mcp_servers,
    time_server,
)

# Slow: MCP servers that crash, hang and flood their pipes
pytestmark = pytest.mark.slow


def tool_events(orch: Orchestrator, thread: str) -> list[dict[str, Any]]:
    return [e for e in orch.trace(thread) if e["kind"] == "tool_call"]


def test_time_server_reads_run_ungated_with_the_servers_own_schema(
    settings: Settings, scripted: ScriptedOpenAI
) -> None:
    orch = orchestrator(settings, scripted, {"time": time_server()})
    scripted.load(
        Reply(tool_calls=[call("time__get_current_time", {"timezone": "Asia/Tokyo"})]),
        Reply(content="It is evening in Tokyo."),
    )
    result = orch.invoke("agent", "What time is it in Tokyo?", thread_id="tm")
    assert result.status == "completed" and result.pending is None
    (event,) = tool_events(orch, "tm")
    assert event["tool"] == "time.get_current_time" and event["ok"]
    assert "Asia/Tokyo" in event["result"]
    offered = {t["function"]["name"]: t["function"] for t in scripted.requests[0]["tools"]}
    schema = offered["time__get_current_time"]["parameters"]
    assert (
        schema["required"] == ["timezone"]
        and "IANA" in schema["properties"]["timezone"]["description"]
    )
    assert "calculate" in offered  # the built-in tools are there too
    with pytest.raises(ConfigurationError, match=r"MCP server 'time' .* has no tool 'get_weather'"):
        tool_specs(parse_mcp_servers({"time": {**time_server(), "tools": ["get_weather"]}}))
    scripted.assert_done()


def test_git_commit_is_gated_and_approving_commits_once(
    settings: Settings, scripted: ScriptedOpenAI, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "repo")
    orch = orchestrator(settings, scripted, {"git": git_server(repo)})
    scripted.load(
        Reply(tool_calls=[call("git__git_status", {"repo_path": str(repo)})]),
        Reply(
            tool_calls=[call("git__git_commit", {"repo_path": str(repo), "message": "Add notes"})]
        ),
        Reply(content="Committed the notes."),
    )
    result = orch.invoke("agent", "Commit the staged notes.", thread_id="g")
    assert result.status == "interrupted" and result.pending is not None
    (pending,) = result.pending.calls
    assert (pending.tool, pending.server, pending.risk) == ("git.git_commit", "git", "write")
    assert commits(repo) == []  # the read ran; nothing was committed before approval
    offered = {t["function"]["name"] for t in scripted.requests[0]["tools"]}
    assert {n for n in offered if n.startswith("git__")} == {  # the allowlist, nothing more
        "git__git_status",
        "git__git_log",
        "git__git_commit",
    }
    assert tool_events(orch, "g")[0]["tool"] == "git.git_status"
    done = orch.resume("g", {"action": "approve", "digest": pending.digest})
    assert done.status == "completed" and done.answer == "Committed the notes."
    assert commits(repo) == ["Add notes"]
    scripted.assert_done()


def test_malformed_crash_hang_oversized_and_error_results_are_typed_and_the_run_goes_on(
    settings: Settings, scripted: ScriptedOpenAI, tmp_path: Path
) -> None:
    log = tmp_path / "effects.jsonl"
    server = faulty_server(log, max_result_chars=500, overrides={"hang": {"timeout_s": 1}})
    policy = Policy(per_tool={"t.crash_write": "never"})  # runs unasked, so it can crash
    orch = orchestrator(
        settings, scripted, {"t": server}, policy, max_tool_errors=10, max_model_calls=10
    )
    steps = [
        ("t__lookup", {"key": 5}),
        ("t__crash", {}),
        ("t__hang", {}),
        ("t__big", {"size": 20_000}),
        ("t__refuse", {}),
        ("t__whoami", {}),
        ("t__crash_write", {"text": "once"}),
    ]
    scripted.load(
        *(Reply(tool_calls=[call(name, args)]) for name, args in steps),
        Reply(content="Done despite the failures."),
    )
    result = orch.invoke("agent", "Exercise the faulty server.", thread_id="f")
    # A write whose server died mid-call is neither failed nor retried: a reviewer decides.
    assert result.status == "interrupted" and result.pending is not None
    (unknown,) = result.pending.calls
    assert (unknown.kind, unknown.tool, unknown.server) == ("outcome_unknown", "t.crash_write", "t")
    assert "closed the connection during the call" in unknown.reason
    result = orch.resume("f", {"action": "reject", "reason": "it did happen; leave it"})
    assert result.status == "completed" and result.answer == "Done despite the failures."
    assert [e["text"] for e in effects(log) if e["tool"] == "crash_write"] == ["once"]
    events = tool_events(orch, "f")
    outcome = {e["tool"]: (e["error"] or {}).get("type", "ok") for e in events}
    assert outcome == {
        "t.lookup": "invalid_arguments",
        "t.crash": "unavailable",
        "t.hang": "timeout",
        "t.big": "ok",
        "t.refuse": "tool_error",
        "t.whoami": "ok",
        "t.crash_write": "outcome_unknown",
    }
    by_tool = {e["tool"]: e for e in events}
    assert "key: Input should be a valid string" in by_tool["t.lookup"]["error"]["message"]
    assert "MCP server 't'" in by_tool["t.crash"]["error"]["message"]
    assert "backing service said no" in by_tool["t.refuse"]["error"]["message"]
    # The model saw the cap's marker; the crashed server was started again for the next call.
    big = [m for m in scripted.requests[4]["messages"] if m["role"] == "tool"][-1]
    assert "truncated by graphwright" in big["content"]
    crashed = {e["pid"] for e in effects(log) if e["tool"] == "crash"}
    assert by_tool["t.whoami"]["ok"] and str(by_tool["t.whoami"]["result"]) not in crashed
    scripted.assert_done()


def test_after_a_process_died_inside_it_an_idempotent_write_reruns_under_its_key_and_others_wait(
    tmp_path: Path, client: redis.Redis, prefix: str
) -> None:
    log = tmp_path / "effects.jsonl"
    config = {**faulty_server(log), "tools": ["set_flag", "post_note"]}
    executor = ToolExecutor(
        ToolRegistry(tool_specs(parse_mcp_servers({"t": config}))), client, keys=Keys(prefix=prefix)
    )
    for name, args in (("t.set_flag", {"name": "ready"}), ("t.post_note", {"text": "hi"})):
        # What a process that died mid-call leaves: a claim and no result.
        executor.records.claim(
            "th", name, tool=name, digest=args_digest(name, args), key=f"th:{name}", fence=None
        )
    flag = executor.execute(
        ToolCall(name="t.set_flag", args={"name": "ready"}, id="t.set_flag"), thread_id="th"
    )
    note = executor.execute(
        ToolCall(name="t.post_note", args={"text": "hi"}, id="t.post_note"), thread_id="th"
    )
    assert flag.ok and flag.result == "ready is set"  # idempotentHint: run again, unasked
    assert note.error is not None and note.error.type == "outcome_unknown"  # a reviewer decides
    assert [(e["tool"], e["meta"]["idempotency_key"]) for e in effects(log)] == [
        ("set_flag", "th:t.set_flag")
    ]


def test_mcp_calls_wait_on_the_run_loop_and_hold_no_pool_thread(
    tmp_path: Path, client: redis.Redis, prefix: str
) -> None:
    """An MCP call is a coroutine on the run loop: reads, writes and a call that times out
    (cancelled there) start no thread of the executor's bounded pools."""
    log = tmp_path / "effects.jsonl"
    specs = tool_specs(
        parse_mcp_servers({"t": faulty_server(log, overrides={"hang": {"timeout_s": 1}})})
    )
    executor = ToolExecutor(ToolRegistry(specs), client, keys=Keys(prefix=prefix))
    read = executor.execute(ToolCall(name="t.whoami", args={}, id="r1"), thread_id="p")
    write = executor.execute(
        ToolCall(name="t.post_note", args={"text": "hi"}, id="w1"), thread_id="p"
    )
    hung = executor.execute(ToolCall(name="t.hang", args={}, id="h1"), thread_id="p")
    assert read.ok and write.ok, (read, write)
    assert hung.error is not None and hung.error.type == "timeout"
    assert [e["tool"] for e in effects(log) if e["tool"] == "post_note"] == ["post_note"]
    assert not executor._reads._threads and not executor._writes._threads
