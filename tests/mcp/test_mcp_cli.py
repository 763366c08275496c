"""MCP tools through the CLI: the tools listing, a run mixing MCP and built-in tools, and a kill."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from graphwright import Settings
from graphwright.checkpoints.redact import MASK
from graphwright.cli import app
from graphwright.testing.scripted_openai import Reply, ScriptedOpenAI, call
from graphwright.testing.until import scaled
from tests.support.mcp_rig import (  # noqa: F401  # stop_mcp_servers: autouse
    ROOT,
    commits,
    faulty_server,
    git,
    git_server,
    make_repo,
    orchestrator,
    stop_mcp_servers,
    time_server,
)

# Slow: MCP servers in their own processes, the CLI killed inside a commit
pytestmark = pytest.mark.slow

CLI = [sys.executable, "-m", "graphwright"]


@pytest.fixture
def cli_env(
    redis_url: str,
    prefix: str,
    scripted: ScriptedOpenAI,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> dict[str, str]:
    """Environment of a CLI on the test Redis with ChatOpenAI against the scripted server."""
    env = {
        "REDIS_URL": redis_url,
        "GRAPHWRIGHT_KEY_PREFIX": prefix,
        "OPENAI_BASE_URL": scripted.base_url,
        "OPENAI_MAX_RETRIES": "0",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    for var in ("OPENAI_API_KEY", "GRAPHWRIGHT_GRAPHS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(str(tmp_path))  # no .env from the checkout
    return env


def invoke(*args: str) -> Any:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.stdout + result.stderr
    return json.loads(result.stdout) if "--json" in args else result.stdout


def test_tools_lists_every_tool_with_source_risk_trust_and_approval(
    cli_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = {
        **faulty_server(tmp_path / "effects.jsonl"),
        "tools": ["lookup", "t.post_note", "read_page"],
    }
    monkeypatch.setenv("GRAPHWRIGHT_MCP_SERVERS", json.dumps({"mcpServers": {"t": config}}))
    rows = {r["name"]: r for r in invoke("tools", "--json")}
    assert rows["calculate"]["source"] == "python" and not rows["calculate"]["needs_approval"]
    assert rows["send_email"]["needs_approval"]
    assert rows["t.lookup"] == {
        "name": "t.lookup",
        "source": "mcp:t",
        "risk": "read",
        "trust": "trusted",
        "needs_approval": False,
        "idempotent": False,
        "timeout_s": 30.0,
        "max_result_chars": 4000,
        "description": "Look a key up in the test dictionary.",
    }
    post = rows["t.post_note"]
    assert (post["risk"], post["trust"], post["needs_approval"]) == ("write", "trusted", True)
    assert rows["t.read_page"]["trust"] == "untrusted"
    assert "t.crash" not in rows  # not in the allowlist
    table = invoke("tools")
    assert "tools of agent" in table and "mcp:t" in table and "needs approval" in table


def test_a_server_that_does_not_start_is_one_line_on_the_cli(
    cli_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    servers = {"broken": {"command": "no-such-mcp-server", "args": ["--flag"], "tools": ["*"]}}
    monkeypatch.setenv("GRAPHWRIGHT_MCP_SERVERS", json.dumps(servers))
    result = CliRunner().invoke(app, ["tools"])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "MCP server 'broken' (no-such-mcp-server --flag) did not start" in result.stderr


def test_one_run_uses_an_mcp_tool_and_a_builtin_and_the_trace_redacts_both(
    cli_env: dict[str, str],
    scripted: ScriptedOpenAI,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    servers = {"t": faulty_server(tmp_path / "effects.jsonl")}
    monkeypatch.setenv("GRAPHWRIGHT_MCP_SERVERS", json.dumps(servers))
    secret = "sk-test" + "4f9a8b7c6d5e4f3a2b1c"
    scripted.load(
        Reply(
            tool_calls=[
                call("t__check_login", {"username": "li", "password": "hunter2"}),
                call("search_notes", {"keyword": secret}),
            ]
        ),
        Reply(content="Login valid; no matching notes."),
    )
    result = invoke(
        "run", "agent", "Check li's login and search the notes.", "--thread", "c", "--json"
    )
    assert result["status"] == "completed" and result["usage"]["tool_calls"] == 2
    calls = {e["tool"]: e for e in invoke("trace", "c", "--json") if e["kind"] == "tool_call"}
    assert set(calls) == {"t.check_login", "search_notes"}
    assert calls["t.check_login"]["args"] == {"username": "li", "password": MASK}
    assert calls["t.check_login"]["ok"] and calls["search_notes"]["args"] == {"keyword": MASK}
    scripted.assert_done()


def test_killed_inside_the_commit_the_resumed_run_does_not_commit_twice(
    cli_env: dict[str, str], settings: Settings, scripted: ScriptedOpenAI, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "repo")
    servers = {"git": git_server(repo)}
    scripted.load(
        Reply(
            tool_calls=[call("git__git_commit", {"repo_path": str(repo), "message": "Add notes"})]
        ),
        Reply(content="The commit's outcome was unknown; I did not repeat it."),
    )
    orch = orchestrator(settings, scripted, servers)
    assert orch.invoke("agent", "Commit the staged notes.", thread_id="k").status == "interrupted"
    # The moment: after the commit exists, before the server answers (a post-commit hook blocks).
    marker = tmp_path / "committed"
    hook = repo / ".git" / "hooks" / "post-commit"
    hook.write_text(f"#!/bin/sh\necho $$ > {marker}\nexec sleep 600\n")
    hook.chmod(0o755)
    env = {
        **os.environ,
        **cli_env,
        "GRAPHWRIGHT_MCP_SERVERS": json.dumps(servers),
        "PYTHONPATH": str(ROOT),
    }
    proc = subprocess.Popen(
        [*CLI, "resume", "k", "--approve"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + scaled(90)
    while not (marker.exists() and marker.read_text().strip()):
        assert proc.poll() is None and time.monotonic() < deadline, "the commit never started"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=scaled(10))
    os.kill(int(marker.read_text()), signal.SIGKILL)  # the hook, in the server's own session
    hook.unlink()
    assert commits(repo) == ["Add notes"]
    resumed = orch.resume("k")  # a new process would do the same: the state is all in Redis
    assert commits(repo) == ["Add notes"]  # the witness: still one commit, nothing re-ran it
    assert resumed.status == "interrupted" and resumed.pending is not None
    (unknown,) = resumed.pending.calls
    assert (unknown.kind, unknown.tool, unknown.server) == (
        "outcome_unknown",
        "git.git_commit",
        "git",
    )
    head = git(repo, "rev-parse", "--short", "HEAD").strip()
    done = orch.resume(
        "k", {"action": "mark_done", "digest": unknown.digest, "result": f"committed as {head}"}
    )
    assert done.status == "completed" and commits(repo) == ["Add notes"]
    scripted.assert_done()
