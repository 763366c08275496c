"""The agent against a real, small and imperfect model: SmolLM2-135M served by llama.cpp's
OpenAI-compatible server (`tests/support/llama_server.py`), through the settings a user sets
(`OPENAI_BASE_URL`). What the model says is its own; what graphwright guarantees is
checked on whatever it said: every run ends cleanly with a stop reason, no write runs
without a reviewer, a call that fails its schema goes back to the model and never to a
reviewer, and a model server that fails ends the run with one line while the next turn
works. llama-cpp-python's server cannot serve every schema or stream tool calls: see
`tests/support/real_model_graphs.py` for the two graphs fitted to it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graphwright import Orchestrator, RunResult
from graphwright.graphs.gates import pending_gate
from graphwright.settings import Settings
from graphwright.testing.until import scaled
from graphwright.tools.executor import argument_problem
from tests.support.llama_server import LlamaServer, llama_server
from tests.support.paths import ROOT

# Slow: a real model (SmolLM2-135M) on llama.cpp's server answering on the CPU. One xdist
# worker runs them all (`--dist loadgroup`), so one server starts, not one per worker.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("real-model")]

MODEL = "smollm2-135m"
# A reply's token cap, as a user sets it (OPENAI_MAX_TOKENS); the server caps its tool-call
# passes itself (`llama_capped.py`), which ignore it.
MAX_TOKENS = 256
GRAPHS = "tests.support.real_model_graphs:register"
WRITES = {"send_email", "create_event"}
GOALS = [  # each takes 2-25 s on a busy 2-core machine (one model thread: llama_server.py)
    "Email the meeting notes to example.com with the subject Notes.",  # not an address
    "Send an email to li@example.com saying the notes are ready.",
    "Where is order A1001?",
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    with llama_server(tmp_path_factory.mktemp("llama") / "server.log") as running:
        yield running


@pytest.fixture
def real(settings: Settings, server: LlamaServer) -> Iterator[Orchestrator]:
    orch = Orchestrator(
        settings=settings.model_copy(
            update={
                "openai_base_url": server.base_url,
                "openai_model": MODEL,
                "graphs": GRAPHS,
                "openai_timeout_s": scaled(120),
                "deadline_s": scaled(240),
                "max_model_calls": 2,
                "openai_max_tokens": MAX_TOKENS,
            }
        )
    )
    yield orch
    orch.close()


def outbox_sent(orch: Orchestrator) -> int:
    return int(orch.client.llen(orch.keys.outbox())) + int(orch.client.hlen(orch.keys.calendar()))


def check_clean_end(orch: Orchestrator, result: RunResult) -> None:
    """The run ended with a stop reason or at a gate, and no write ran without a reviewer."""
    assert result.error is None, result.error
    assert result.status in ("completed", "stopped", "interrupted"), result
    if result.status == "interrupted":
        assert result.pending is not None
        for pending in result.pending.calls:  # only runnable calls ever reach a reviewer
            spec = orch.tools("real_agent").get(pending.tool)
            assert spec is not None and argument_problem(spec, pending.args) is None, pending
    else:
        assert result.stop_reason, result
    assert outbox_sent(orch) == 0, "a write ran without a reviewer's approval"


def invalid_calls_fed_back(orch: Orchestrator, thread_id: str) -> int:
    """Every call refused at validation was answered to the model as an error, not gated."""
    events = orch.trace(thread_id)
    refused = [
        e
        for e in events
        if e["kind"] == "tool_call"
        and not e["ok"]
        and (e.get("error") or {}).get("type") == "invalid_arguments"
    ]
    messages: list[Any] = (orch.snapshot(thread_id).values or {}).get("messages", [])
    answered = {m.tool_call_id: str(m.content) for m in messages if m.type == "tool"}
    for event in refused:
        assert "invalid_arguments" in answered.get(event["call_id"], ""), event
    return len(refused)


@pytest.mark.parametrize("goal", GOALS)
def test_each_goal_ends_cleanly_with_no_ungated_write(real: Orchestrator, goal: str) -> None:
    result = real.invoke("real_agent", goal)
    check_clean_end(real, result)
    invalid_calls_fed_back(real, result.thread_id)
    graph = real.compiled("real_agent")
    gate = pending_gate(graph, {"configurable": {"thread_id": result.thread_id}})
    assert (gate is not None) == (result.status == "interrupted")
    assert all(c.tool in WRITES for c in (gate.calls if gate else []))


def test_calls_that_fail_their_schema_go_back_to_the_real_model(real: Orchestrator) -> None:
    # The model sees no patterns (see real_model_graphs): "1001" is not an order id (A1001),
    # "Beijing" not a UTC offset. The schema refuses them and the model hears why.
    refused, proposed = 0, []
    for goal in ("Where is order 1001?", "What time is it in Beijing?"):
        result = real.invoke("real_agent", goal)
        check_clean_end(real, result)
        refused += invalid_calls_fed_back(real, result.thread_id)
        proposed += [
            c["tool_calls"] for c in real.trace(result.thread_id) if c["kind"] == "model_call"
        ]
    assert refused >= 1, proposed


def test_a_failing_model_server_ends_the_run_with_one_line_and_the_next_turn_works(
    server: LlamaServer,
    redis_url: str,
    prefix: str,
    tmp_path: Path,
) -> None:
    env = {
        **os.environ,
        "REDIS_URL": redis_url,
        "GRAPHWRIGHT_KEY_PREFIX": prefix,
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_MODEL": MODEL,
        "OPENAI_MAX_TOKENS": str(MAX_TOKENS),
        "OPENAI_TIMEOUT": "2",
        "OPENAI_MAX_RETRIES": "1",
        "GRAPHWRIGHT_MAX_MODEL_CALLS": "3",
        "COLUMNS": "200",
        "GRAPHWRIGHT_GRAPHS": GRAPHS,
        "PYTHONPATH": str(ROOT),
    }
    cli = [sys.executable, "-m", "graphwright", "run", "chat"]  # the CLI streams: no tools
    server.pause()  # frozen: it takes the connection and never answers
    try:
        failed = subprocess.run(
            [*cli, "What is 2 + 2?", "--thread", "t"],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=scaled(120),
        )
    finally:
        server.resume()
    assert failed.returncode == 1 and "Traceback" not in failed.stdout + failed.stderr
    lines = [line for line in failed.stdout.splitlines() if line.startswith("failed:")]
    assert lines == [
        f"failed: the model call failed ({MODEL} at {server.base_url}, 2 attempts): "
        "APITimeoutError: Request timed out."
    ], failed.stdout
    env["OPENAI_TIMEOUT"] = str(scaled(120))
    again = subprocess.run(
        [*cli, "What is 2 + 2?", "--thread", "t"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=scaled(600),
    )
    assert "Traceback" not in again.stdout + again.stderr
    assert again.returncode == 0 and "thread t" in again.stdout, again.stdout + again.stderr
