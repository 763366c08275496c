"""Async LangGraph projects on every path: `async def` nodes, an async tool, a
`create_agent` with async middleware, and subgraphs of the other kind.

The project in tests/support/async_project is written the way LangGraph's templates are. Each
graph runs through the sync and async Python API, the CLI, the HTTP service with a
worker, the HTTP service's own process and a cron; every run goes through `astream`
on the process's run loop, under the thread's lock and its fencing token.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_sync_client
from typer.testing import CliRunner

from graphwright import Orchestrator
from graphwright.cli import app
from graphwright.locking import held
from graphwright.server.background.cron_runs import scheduler_for
from graphwright.server.records.run_store import RunStore
from graphwright.server.runs.execution import Executor
from graphwright.settings import Settings
from graphwright.testing.kit import until
from graphwright.testing.redis_servers import Server
from graphwright.testing.scripted_openai import Reply, ScriptedOpenAI, call
from graphwright.testing.service import running
from graphwright.tools.runloop import submit
from graphwright_errors import ConfigurationError
from tests.support.paths import SUPPORT

PROJECT = SUPPORT / "async_project"
SUBGRAPHS = {  # the marks each run leaves: its own steps, then the subgraph's
    "sync_over_async": ["sync_before", "sync_after", "async_inner"],
    "async_over_sync": ["async_before", "sync_inner"],
}
TOP_NODES = {  # the top graph's steps, as the stream reports them
    "sync_over_async": ["sync_before", "async_sub", "sync_after"],
    "async_over_sync": ["async_before", "sync_sub"],
}


@dataclass
class Project:
    orch: Orchestrator
    model: ScriptedOpenAI
    root: Path
    prefix: str
    redis_url: str

    def effects(self) -> list[str]:
        """What the agent's tool and middleware did, in order; emptied for the next test."""
        path = self.root / "notes" / "effects.txt"
        lines = path.read_text().splitlines() if path.exists() else []
        path.unlink(missing_ok=True)
        return lines

    def steps(self, thread_id: str) -> list[str]:
        values = self.orch.snapshot(thread_id).values
        return [*values["steps"], *values.get("inner", [])]


@pytest.fixture(scope="module")
def project(redis_server: Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    model = ScriptedOpenAI()
    root = tmp_path_factory.mktemp("async_project")
    shutil.copytree(PROJECT, root, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    (root / "notes").mkdir()
    env = {
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": model.base_url,
        "NOTES_DIR": str(root / "notes"),
    }
    (root / ".env").write_text("".join(f"{k}={v}\n" for k, v in env.items()))
    patch = pytest.MonkeyPatch()
    for key, value in env.items():
        patch.setenv(key, value)
    prefix = f"a{uuid.uuid4().hex[:10]}"
    settings = Settings(_env_file=None, REDIS_URL=redis_server.url, GRAPHWRIGHT_KEY_PREFIX=prefix)  # type: ignore[call-arg]
    orch = Orchestrator.from_config(root / "langgraph.json", settings=settings)
    try:
        yield Project(orch=orch, model=model, root=root, prefix=prefix, redis_url=redis_server.url)
    finally:
        patch.undo()
        model.close()
        orch.client.close()
    assert not model.unexpected


def agent_turn(project: Project) -> None:
    """One async tool call, then the answer."""
    project.model.load(
        Reply(tool_calls=[call("add_note", {"text": "milk"}, id="call_milk")]),
        Reply(content="Noted milk."),
    )


AGENT_EFFECTS = ["before_model", "note:milk", "before_model"]  # the middleware ran twice


# --- the Python API, sync and async --------------------------------------------------


def test_async_def_nodes_run_through_the_sync_api(project: Project) -> None:
    project.model.load(Reply(content="hello back"))
    result = project.orch.invoke("async_nodes", {"text": "hello"}, thread_id="api-nodes")
    assert result.status == "completed", result.error
    assert project.steps("api-nodes") == ["model:hello back", "settled"]
    project.model.assert_done()


def test_async_def_nodes_run_through_the_async_api(project: Project) -> None:
    project.model.load(Reply(content="hi"))
    result = asyncio.run(
        project.orch.ainvoke("async_nodes", {"text": "hello"}, thread_id="aapi-nodes")
    )
    assert result.status == "completed", result.error
    assert project.steps("aapi-nodes") == ["model:hi", "settled"]


@pytest.mark.parametrize("graph", sorted(SUBGRAPHS))
def test_subgraphs_of_the_other_kind_run_through_both_apis(project: Project, graph: str) -> None:
    result = project.orch.invoke(graph, {"text": "x"}, thread_id=f"sub-{graph}")
    assert result.status == "completed", result.error
    assert project.steps(f"sub-{graph}") == SUBGRAPHS[graph]

    async def twice() -> list[str]:
        events = [
            e async for e in project.orch.astream(graph, {"text": "x"}, thread_id=f"asub-{graph}")
        ]
        return [e.node for e in events if e.kind == "step"]

    assert asyncio.run(twice()) == TOP_NODES[graph]


def test_create_agent_with_an_async_tool_and_async_middleware(project: Project) -> None:
    agent_turn(project)
    result = project.orch.invoke("async_agent", "note milk", thread_id="api-agent")
    assert result.status == "completed", result.error
    assert result.answer == "Noted milk."
    assert project.effects() == AGENT_EFFECTS
    agent_turn(project)
    again = asyncio.run(project.orch.ainvoke("async_agent", "note milk", thread_id="aapi-agent"))
    assert again.answer == "Noted milk." and project.effects() == AGENT_EFFECTS


def test_every_checkpoint_put_of_a_langgraph_json_graph_carries_the_runs_fence(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    fences: list[Any] = []
    saver = project.orch.asaver
    original = saver.aput

    async def recording(config: Any, *args: Any) -> Any:
        fences.append(config["configurable"].get("gw_fence"))
        return await original(config, *args)

    monkeypatch.setattr(saver, "aput", recording)
    result = project.orch.invoke("async_over_sync", {"text": "x"}, thread_id="fenced")
    assert result.status == "completed", result.error
    token = int(project.orch.client.get(project.orch.keys.fence("fenced")) or 0)
    assert token >= 1 and fences and set(fences) == {token}


# --- the CLI ---------------------------------------------------------------------------


def test_the_cli_runs_async_nodes_and_streams_their_tokens(
    project: Project, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("REDIS_URL", project.redis_url)
    monkeypatch.setenv("GRAPHWRIGHT_KEY_PREFIX", project.prefix)
    monkeypatch.setenv("GRAPHWRIGHT_CONFIG", "")
    monkeypatch.chdir(tmp_path)
    project.model.load(Reply(content="streamed words"))
    result = CliRunner().invoke(
        app,
        [
            "--config",
            str(project.root / "langgraph.json"),
            "run",
            "async_nodes",
            "--input",
            json.dumps({"text": "hi"}),
            "--thread",
            "cli-nodes",
        ],
    )
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert "call_model› streamed words" in result.stdout  # its tokens, as they came
    assert project.steps("cli-nodes") == ["model:streamed words", "settled"]


# --- HTTP: a worker, the API process, a cron ---------------------------------------------


def sdk_paths(project: Project, queue: bool) -> None:
    with running(project.orch, worker=queue, queue_waits=queue) as service:
        sdk = get_sync_client(url=service.url, api_key=None)
        project.model.load(Reply(content="over http"))
        thread = sdk.threads.create()["thread_id"]
        out = sdk.runs.wait(thread, "async_nodes", input={"text": "hi"})
        assert out["steps"] == ["model:over http", "settled"], out
        for graph, steps in SUBGRAPHS.items():
            thread = sdk.threads.create()["thread_id"]
            out = sdk.runs.wait(thread, graph, input={"text": "x"})
            assert [*out["steps"], *out["inner"]] == steps
        agent_turn(project)
        thread = sdk.threads.create()["thread_id"]
        out = sdk.runs.wait(
            thread, "async_agent", input={"messages": [{"role": "user", "content": "note milk"}]}
        )
        assert out["messages"][-1]["content"] == "Noted milk."
        assert project.effects() == AGENT_EFFECTS
        thread = sdk.threads.create()["thread_id"]
        events = list(
            sdk.runs.stream(thread, "async_over_sync", input={"text": "x"}, stream_mode="events")
        )
        assert any(e.event == "events" for e in events)  # astream_events, natively


def test_http_runs_of_async_graphs_on_a_worker(project: Project) -> None:
    sdk_paths(project, queue=True)


def test_http_runs_of_async_graphs_in_the_api_process(project: Project) -> None:
    sdk_paths(project, queue=False)


def test_a_cron_runs_an_async_graph(project: Project) -> None:
    scheduler = scheduler_for(project.orch)
    with running(project.orch, worker=True) as service:
        scheduler.start()
        try:
            sdk = get_sync_client(url=service.url, api_key=None)
            thread = sdk.threads.create()["thread_id"]
            cron = sdk.crons.create_for_thread(
                thread, "async_over_sync", schedule="* * * * * *", input={"text": "x"}
            )
            until(
                lambda: any(r["status"] == "success" for r in sdk.runs.list(thread)),
                "a cron run of the async graph to succeed",
            )
            sdk.crons.delete(cron["cron_id"])
        finally:
            scheduler.stop.set()
    assert project.steps(thread)[:2] == SUBGRAPHS["async_over_sync"]


# --- the run core: many runs on one loop, cancellation ------------------------------------


def test_executor_arun_runs_many_runs_at_once_on_one_loop(project: Project) -> None:
    orch = project.orch
    with running(orch, worker=False, queue_waits=True) as service:  # runs wait in the queue
        sdk = get_sync_client(url=service.url, api_key=None)
        threads = [sdk.threads.create()["thread_id"] for _ in range(8)]
        runs = [sdk.runs.create(t, "nap", input={"nap_s": 1.0})["run_id"] for t in threads]
        executor = Executor(orch, RunStore(orch.client, orch.keys))

        async def all_at_once() -> list[str]:
            pairs = zip(threads, runs, strict=True)
            return list(await asyncio.gather(*(executor.arun(t, r) for t, r in pairs)))

        started = time.monotonic()
        outcomes = asyncio.run(all_at_once())
        took = time.monotonic() - started
        assert outcomes == ["done"] * 8
        statuses = [sdk.runs.get(t, r)["status"] for t, r in zip(threads, runs, strict=True)]
        assert statuses == ["success"] * 8
    assert took < 4.0, f"8 runs of a 1 s node took {took:.1f}s: they did not overlap"
    for thread in threads:  # each under its own lock, with its own fence
        assert orch.client.get(orch.keys.fence(thread)) == b"1"
        assert project.steps(thread) == ["quick", "napped"]


def test_a_reader_that_stops_early_cancels_the_run_and_frees_the_thread(project: Project) -> None:
    orch = project.orch
    events = orch.stream("nap", {"nap_s": 60}, thread_id="early")
    assert next(events).node == "quick"
    assert held(orch.client, orch.keys, "early")
    started = time.monotonic()
    events.close()  # the nap is cancelled at its await, the lock given back
    assert not held(orch.client, orch.keys, "early")
    assert time.monotonic() - started < 5

    async def cancelled() -> None:
        task = asyncio.ensure_future(orch.ainvoke("nap", {"nap_s": 60}, thread_id="early-async"))
        await asyncio.sleep(0.5)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(cancelled())
    until(lambda: not held(orch.client, orch.keys, "early-async"), "the cancelled run's lock to go")
    for thread in ("early", "early-async"):  # what a cancelled step left behind is fenced out
        assert orch.client.get(orch.keys.fence(thread)) == b"2"


def test_the_sync_api_called_on_the_run_loop_is_refused_rather_than_deadlocking(
    project: Project,
) -> None:
    async def inside() -> None:
        with pytest.raises(ConfigurationError, match="await its async twin"):
            project.orch.invoke("async_over_sync", {"text": "x"}, thread_id="refused")
        result = await project.orch.ainvoke("async_over_sync", {"text": "x"}, thread_id="refused")
        assert result.status == "completed"  # the twin, awaited on the loop itself

    submit(inside()).result(30)
