"""`show` reads the summary a run recorded for the thread's head, without the graph, and
prints what the graph's own reading prints; a thread whose head moved since is read
through the graph again."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from graphwright.cli import app
from graphwright.nodes.gate_models import decide_all
from graphwright.orchestrator import Orchestrator
from graphwright.reader import ThreadReader
from graphwright.server.records.run_store import RunStore
from graphwright.server.runs.execution import Executor
from graphwright.server.schemas.run_bodies import RunCreate
from graphwright.settings import Settings
from graphwright.summary import FIELD

EMAIL = 'Email li@example.com with the subject "Weekly report" saying the report is ready.'
WORKERS = "订单 A1001 到哪了？帮我安排“设计评审”，2026-12-01 10:00-11:00。"


@pytest.fixture
def cli(
    redis_url: str, prefix: str, monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> CliRunner:
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("GRAPHWRIGHT_KEY_PREFIX", prefix)
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "GRAPHWRIGHT_GRAPHS", "GRAPHWRIGHT_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(str(tmp_path))  # no .env or langgraph.json from the checkout
    return CliRunner()


def shown(cli: CliRunner, thread: str) -> str:
    result = cli.invoke(app, ["show", thread])
    assert result.exit_code == 0, result.stderr
    return result.stdout


def threads_in_every_state(orch: Orchestrator) -> list[str]:
    orch.invoke("agent", "What is 2 + 2?", thread_id="done")
    orch.invoke("agent", EMAIL, thread_id="gated")
    gate = orch.invoke("agent", EMAIL, thread_id="rejected").pending
    assert gate is not None
    orch.resume("rejected", decide_all(gate, "reject", reason="not now", end_run=True))
    orch.invoke("orchestrator", WORKERS, thread_id="workers")  # a worker subgraph's gate
    return ["done", "gated", "rejected", "workers"]


def test_the_recorded_summary_is_what_the_graph_reads(
    orch: Orchestrator, settings: Settings, cli: CliRunner
) -> None:
    threads = threads_in_every_state(orch)
    reader = ThreadReader(settings)
    recorded = {t: shown(cli, t) for t in threads}
    for thread in threads:
        assert reader.summary(thread) == orch.summary(thread), thread
        orch.client.hdel(orch.keys.meta(thread), FIELD)
        assert reader.summary(thread) is None
        assert shown(cli, thread) == recorded[thread], thread  # through the graph now
    assert "waiting for approval" in recorded["gated"] and "scheduler" in recorded["workers"]


def test_a_thread_changed_after_its_run_is_read_through_its_graph(
    orch: Orchestrator, settings: Settings, cli: CliRunner
) -> None:
    orch.invoke("agent", "What is 2 + 2?", thread_id="t")
    reader = ThreadReader(settings)
    assert reader.summary("t") is not None
    config = orch._config("t")
    orch.compiled("agent").update_state(config, {"answer": "changed by hand"})  # a new head
    assert reader.summary("t") is None
    assert "changed by hand" in shown(cli, "t")


def test_an_http_run_records_the_summary_an_api_run_does(
    orch: Orchestrator, settings: Settings
) -> None:
    """The worker's executor ends a run as `invoke` does: `show` reads its summary."""
    store = RunStore(orch.client, orch.keys)
    reader = ThreadReader(settings)
    for thread, goal in (("http-done", "What is 2 + 2?"), ("http-gated", EMAIL)):
        orch.create_thread(thread)
        body = RunCreate(assistant_id="agent", input={"goal": goal})
        run = store.create(thread, body, queue=False)
        assert Executor(orch, store).run(thread, run.run_id) == "done"
        recorded = reader.summary(thread)
        assert recorded is not None, thread
        assert recorded == orch.summary(thread), thread
    assert reader.summary("http-gated").pending is not None  # type: ignore[union-attr]
