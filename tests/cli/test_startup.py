"""What `import graphwright` and each CLI command load: a new eager import of LangGraph, a
model client, the server or MCP fails here rather than on a stopwatch (`bench/startup.py`
times them). `show` of a thread its run recorded, and `trace`, load no LangGraph at all.

Each case is a fresh interpreter (the point: what a user's shell pays), which prints the
modules it ended with.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from graphwright.orchestrator import Orchestrator
from graphwright.settings import Settings
from graphwright.testing import slowdown

# Slow: fresh interpreters: what a user's shell loads
pytestmark = pytest.mark.slow

# What the command's interpreter loaded, by top-level package, printed after it ran.
PROBE = """
import json, sys
from graphwright.cli import app
try:
    app(sys.argv[1:])
except SystemExit as exc:
    if exc.code not in (0, None):
        raise
print("\\n" + json.dumps(sorted(sys.modules)))
"""
IMPORT_ONLY = "import json, sys, graphwright; print(json.dumps(sorted(sys.modules)))"

MODEL_CLIENT = {"langchain_openai", "openai", "tiktoken"}
SERVER = {"fastapi", "starlette", "uvicorn", "sse_starlette"}
MCP = {"mcp", "mcp_types"}
LANGGRAPH = {"langgraph", "langchain_core", "langsmith", "redis", "pydantic_settings"}
LANGGRAPH_ITSELF = {
    "langgraph",
    "langchain_core",
    "langsmith",
}  # what a read without the graph skips


def loaded(args: list[str], env: dict[str, str] | None = None) -> set[str]:
    """Top-level packages a fresh interpreter running `args` ends with."""
    out = subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        timeout=60 * slowdown(),
    ).stdout
    return {name.split(".")[0] for name in json.loads(out.splitlines()[-1])}


@pytest.fixture
def env(redis_url: str, prefix: str, tmp_path: Path) -> dict[str, str]:
    """The environment of a user's shell on the test Redis, offline model, no plugins."""
    out = {
        k: v
        for k, v in os.environ.items()
        if k
        not in (
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "GRAPHWRIGHT_GRAPHS",
            "GRAPHWRIGHT_MCP_SERVERS",
            "GRAPHWRIGHT_CONFIG",
        )
    }
    return {
        **out,
        "REDIS_URL": redis_url,
        "GRAPHWRIGHT_KEY_PREFIX": prefix,
        "GRAPHWRIGHT_HOME": str(tmp_path),
    }


def test_import_graphwright_loads_no_langgraph_model_client_server_or_mcp() -> None:
    modules = loaded(["-c", IMPORT_ONLY])
    assert not modules & (LANGGRAPH | MODEL_CLIENT | SERVER | MCP), modules


def test_every_public_name_still_imports_from_the_package() -> None:
    import graphwright

    assert set(graphwright.__all__) <= set(dir(graphwright))
    for name in graphwright.__all__:
        assert getattr(graphwright, name).__name__ == name
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        graphwright.Nope  # noqa: B018  # the lookup is the test


def test_help_loads_no_langgraph_model_client_server_or_mcp() -> None:
    modules = loaded(["-c", PROBE, "--help"])
    assert not modules & (LANGGRAPH | MODEL_CLIENT | SERVER | MCP), modules


@pytest.mark.parametrize(
    "command",
    [
        ["show", "s1"],
        ["trace", "s1"],
        ["threads"],
        ["history", "s1"],
        ["draw", "agent"],
        ["run", "agent", "What is 2 + 2?"],
    ],
)
def test_inspections_and_an_offline_run_load_no_model_client_server_or_mcp(
    env: dict[str, str], command: list[str]
) -> None:
    settings = Settings(
        _env_file=None,
        REDIS_URL=env["REDIS_URL"],  # type: ignore[call-arg]
        GRAPHWRIGHT_KEY_PREFIX=env["GRAPHWRIGHT_KEY_PREFIX"],
    )
    orch = Orchestrator(settings=settings)
    try:
        orch.invoke("agent", "What is 2 + 2?", thread_id="s1")
    finally:
        orch.client.close()
    modules = loaded(["-c", PROBE, *command], env)
    assert not modules & (MODEL_CLIENT | SERVER | MCP), modules


@pytest.mark.parametrize("command", [["show", "s1"], ["show", "gated"], ["trace", "s1"]])
def test_show_of_a_recorded_thread_and_trace_load_no_langgraph(
    env: dict[str, str], command: list[str]
) -> None:
    settings = Settings(
        _env_file=None,
        REDIS_URL=env["REDIS_URL"],  # type: ignore[call-arg]
        GRAPHWRIGHT_KEY_PREFIX=env["GRAPHWRIGHT_KEY_PREFIX"],
    )
    orch = Orchestrator(settings=settings)
    try:
        orch.invoke("agent", "What is 2 + 2?", thread_id="s1")
        orch.invoke("agent", "Email li@example.com to say hello", thread_id="gated")
    finally:
        orch.client.close()
    modules = loaded(["-c", PROBE, *command], env)
    assert not modules & (LANGGRAPH_ITSELF | MODEL_CLIENT | SERVER | MCP), modules
