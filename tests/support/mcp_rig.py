"""Configurations of the real MCP servers the tests start, and an Orchestrator wired to them."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from graphwright import Orchestrator, Settings
from graphwright.nodes.deps import Limits
from graphwright.testing.scripted_openai import ScriptedOpenAI
from graphwright.testing.until import scaled
from graphwright.tools.mcp_client import close_all
from graphwright.tools.policy import Policy
from tests.support.paths import ROOT


@pytest.fixture(autouse=True)
def stop_mcp_servers() -> Iterator[None]:
    """Stop the servers a test started (they are per process otherwise, until exit)."""
    yield
    close_all()


def time_server() -> dict[str, Any]:
    return {"command": sys.executable, "args": ["-m", "mcp_server_time"], "tools": ["*"]}


def git_server(repo: Path) -> dict[str, Any]:
    return {
        "command": sys.executable,
        "args": ["-m", "mcp_server_git", "--repository", str(repo)],
        "tools": ["git_status", "git.git_log", "git_commit"],
    }


def faulty_server(log: Path, **extra: Any) -> dict[str, Any]:
    """The FastMCP test server over stdio; `log` receives one line per effect."""
    return {
        "command": sys.executable,
        "args": ["-m", "tests.support.mcp_test_server"],
        "env": {"MCP_TEST_LOG": str(log), "PYTHONPATH": str(ROOT)},
        "cwd": str(ROOT),
        "tools": ["*"],
        **extra,
    }


def effects(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def make_repo(path: Path) -> Path:
    """A git repository with one file staged and no commit yet."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "test@example.com")
    git(path, "config", "user.name", "Test")
    (path / "notes.txt").write_text("first note\n")
    git(path, "add", "notes.txt")
    return path


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def commits(repo: Path) -> list[str]:
    """The witness: commit subjects in the repository, newest first."""
    out = subprocess.run(
        ["git", "-C", str(repo), "log", "--format=%s"], capture_output=True, text=True, check=False
    )
    return out.stdout.splitlines() if out.returncode == 0 else []


def orchestrator(
    settings: Settings,
    scripted: ScriptedOpenAI,
    servers: dict[str, Any],
    policy: Policy | None = None,
    **limits: Any,
) -> Orchestrator:
    """The Orchestrator with the real ChatOpenAI against `scripted` and these MCP servers."""
    configured = settings.model_copy(
        update={
            "openai_base_url": scripted.base_url,
            "openai_max_retries": 0,
            "openai_timeout_s": 20,
        }
    )
    return Orchestrator(
        settings=configured,
        mcp_servers=servers,
        policy=policy,
        limits=Limits(**limits) if limits else None,
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def http_server(
    log: Path, port: int | None = None
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """The FastMCP test server over streamable HTTP in its own process; yields its URL."""
    port = port or free_port()
    env = {"MCP_TEST_LOG": str(log), "PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.mcp_test_server", "--http", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + scaled(30)
        while True:  # until it accepts connections
            assert proc.poll() is None, "the HTTP MCP test server exited"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=scaled(1)).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the HTTP MCP test server did not start"
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp", proc
    finally:
        proc.kill()
        proc.wait(timeout=scaled(10))
