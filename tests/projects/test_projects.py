"""LangGraph projects from a langgraph.json, served by graphwright and by `langgraph dev`.

The projects in tests/support/projects are written the way LangGraph's templates are; each is
driven through graphwright's CLI, Python API and langgraph-sdk, and the same SDK calls
against `langgraph dev` must get the same answers.
"""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_sync_client
from typer.testing import CliRunner

from graphwright import Orchestrator
from graphwright.cli import app
from graphwright.settings import Settings
from graphwright.testing.redis_servers import Server
from graphwright.testing.scripted_openai import Reply, ScriptedOpenAI, call
from graphwright.testing.service import Service, running
from graphwright.testing.until import scaled
from tests.support.langgraph_dev import langgraph_dev
from tests.support.paths import ROOT, SUPPORT

# Slow: langgraph.json projects served and answered in Chromium
pytestmark = pytest.mark.slow

PROJECT = SUPPORT / "projects"


@dataclass
class Both:
    gw: Service
    dev: str
    model: ScriptedOpenAI
    root: Path
    prefix: str
    redis_url: str

    def servers(self) -> dict[str, str]:
        return {"graphwright": self.gw.url, "langgraph dev": self.dev}

    def notes(self) -> dict[str, str]:
        found = {p.stem: p.read_text() for p in sorted((self.root / "notes").glob("*.txt"))}
        for p in (self.root / "notes").glob("*.txt"):
            p.unlink()
        return found


@pytest.fixture(scope="module")
def both(redis_server: Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Both]:
    model = ScriptedOpenAI()
    root = tmp_path_factory.mktemp("project")
    shutil.copytree(PROJECT, root, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    (root / "notes").mkdir()
    env = {
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": model.base_url,
        "NOTES_DIR": str(root / "notes"),
    }
    (root / ".env").write_text("".join(f"{k}={v}\n" for k, v in env.items()))
    patch = pytest.MonkeyPatch()
    for key, value in env.items():  # from_config applies the env file; undone after the module
        patch.setenv(key, value)
    prefix = f"p{uuid.uuid4().hex[:10]}"
    settings = Settings(_env_file=None, REDIS_URL=redis_server.url, GRAPHWRIGHT_KEY_PREFIX=prefix)  # type: ignore[call-arg]
    orch = Orchestrator.from_config(root / "langgraph.json", settings=settings)
    try:
        with langgraph_dev(root) as dev, running(orch, worker=False) as gw:
            yield Both(
                gw=gw, dev=dev, model=model, root=root, prefix=prefix, redis_url=redis_server.url
            )
    finally:
        patch.undo()
        model.close()
        orch.client.close()
    assert not model.unexpected


@pytest.fixture
def cli(both: Both, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[..., Any]:
    """`graphwright --config <project> ARGS --json` in this process; its parsed output."""
    monkeypatch.setenv("REDIS_URL", both.redis_url)
    monkeypatch.setenv("GRAPHWRIGHT_KEY_PREFIX", both.prefix)
    monkeypatch.setenv("GRAPHWRIGHT_CONFIG", "")  # --config sets it; restored afterwards
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()

    def run(*args: str) -> Any:
        result = runner.invoke(
            app, ["--config", str(both.root / "langgraph.json"), *args, "--json"]
        )
        assert result.exit_code == 0, (args, result.stdout, result.stderr)
        return json.loads(result.stdout)

    return run


def sdk_run(url: str, graph: str, input: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """One run on a new thread through langgraph-sdk: what runs.wait and threads.get_state give."""
    client = get_sync_client(url=url, api_key=None)
    thread = client.threads.create()["thread_id"]
    out = client.runs.wait(thread, graph, input=input, **kwargs)
    state = client.threads.get_state(thread)
    return {"thread": thread, "wait": out, "values": state["values"], "next": state["next"]}


def plain(value: Any) -> Any:
    """Messages as what they say (type, text, calls); their random ids and empty fields dropped."""
    if isinstance(value, list):
        return [plain(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "type" in value and "content" in value:
        calls = [(c["name"], c["args"], c["id"]) for c in value.get("tool_calls") or []]
        return (value["type"], value["content"], calls, value.get("tool_call_id"))
    return {k: plain(v) for k, v in value.items()}


def same_on_both(both: Both, graph: str, input: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    answers = {name: sdk_run(url, graph, input, **kwargs) for name, url in both.servers().items()}
    mine, theirs = answers["graphwright"], answers["langgraph dev"]
    assert plain(mine["wait"]) == plain(theirs["wait"])
    assert plain(mine["values"]) == plain(theirs["values"]) and mine["next"] == theirs["next"] == []
    return mine


def test_a_state_graph_with_its_own_input_schema(both: Both, cli: Callable[..., Any]) -> None:
    given = {"topic": "redis", "depth": 1}
    expected = "redis: part 1 / redis: more / redis: more (signed)"
    result = both.gw.orch.invoke("report", given)
    assert result.status == "completed"
    assert both.gw.orch.state(result.thread_id).values["report"] == expected
    ran = cli("run", "report", "--input", json.dumps(given))
    assert ran["status"] == "completed"
    assert both.gw.orch.state(ran["thread_id"]).values["report"] == expected
    assert same_on_both(both, "report", given)["values"]["report"] == expected


def test_a_functional_entrypoint(both: Both, cli: Callable[..., Any]) -> None:
    given = {"text": "hello big world"}
    result = both.gw.orch.invoke("pipeline", given)
    assert both.gw.orch.state(result.thread_id).values == {"words": 3, "loud": "HELLO BIG WORLD"}
    assert cli("run", "pipeline", "--input", json.dumps(given))["status"] == "completed"
    assert same_on_both(both, "pipeline", given)["values"] == {
        "words": 3,
        "loud": "HELLO BIG WORLD",
    }


def test_a_factory_taking_the_config_and_a_plain_string_input(
    both: Both, cli: Callable[..., Any]
) -> None:
    assert both.gw.orch.invoke("configured", "Ada").answer == "Hello, Ada!"
    assert cli("run", "configured", "Grace")["answer"] == "Hello, Grace!"
    given = {"messages": [{"role": "user", "content": "Alan"}]}
    mine = same_on_both(both, "configured", given)
    assert [m["content"] for m in mine["values"]["messages"]] == ["Alan", "Hello, Alan!"]
    configured = same_on_both(
        both, "configured", given, config={"configurable": {"greeting": "Hi"}}
    )
    assert configured["values"]["messages"][-1]["content"] == "Hi, Alan!"  # built for this run


def notes_turn(both: Both) -> None:
    """What the model says in one gated conversation: two writes, then an answer."""
    both.model.load(
        Reply(
            tool_calls=[
                call("write_note", {"title": "a", "body": "first"}, id="call_a"),
                call("write_note", {"title": "b", "body": "second"}, id="call_b"),
            ]
        ),
        Reply(content="Both notes are written."),
    )


def test_create_agent_gate_through_the_sdk_matches_langgraph_dev(both: Both) -> None:
    seen: dict[str, Any] = {}
    for name, url in both.servers().items():
        client = get_sync_client(url=url, api_key=None)
        thread = client.threads.create()["thread_id"]
        notes_turn(both)
        start = len(both.model.requests)
        first = client.runs.wait(
            thread, "assistant", input={"messages": [{"role": "user", "content": "two notes"}]}
        )
        request = first["__interrupt__"][0]["value"]
        assert [a["name"] for a in request["action_requests"]] == ["write_note", "write_note"]
        assert both.notes() == {}  # nothing written before the reviewer answers
        edit = {
            "type": "edit",
            "edited_action": {"name": "write_note", "args": {"title": "b", "body": "edited"}},
        }
        done = client.runs.wait(
            thread, "assistant", command={"resume": {"decisions": [{"type": "approve"}, edit]}}
        )
        assert "__interrupt__" not in done
        seen[name] = {
            "interrupt": request,
            "notes": both.notes(),
            "messages": plain(done["messages"]),
            "model_saw": [r["messages"] for r in both.model.requests[start:]],
        }
    assert seen["graphwright"]["notes"] == {"a": "first", "b": "edited"}
    assert seen["graphwright"] == seen["langgraph dev"]
    assert not both.model.script


def test_create_agent_gate_from_the_python_api_and_the_cli(
    both: Both, cli: Callable[..., Any]
) -> None:
    orch = both.gw.orch
    notes_turn(both)
    waiting = orch.invoke("assistant", "two notes")
    assert waiting.status == "interrupted" and waiting.pending is not None
    a, b = waiting.pending.calls
    assert (a.id, b.id, a.description) == (
        "call_a",
        "call_b",
        "Writing a note changes the notes folder",
    )
    assert waiting.pending.action_requests[1]["args"] == {"title": "b", "body": "second"}
    done = orch.resume(
        waiting.thread_id,
        {
            a.id: {"action": "approve", "digest": a.digest},
            b.id: {"action": "reject", "digest": b.digest, "reason": "not b"},
        },
    )
    assert done.status == "completed" and done.answer == "Both notes are written."
    assert both.notes() == {"a": "first"}
    told = [m["content"] for m in both.model.requests[-1]["messages"] if m["role"] == "tool"]
    assert sorted(told) == [
        "User rejected the tool call for `write_note` with reason: not b",
        "wrote a.txt",
    ]

    for flag, expected in (
        (["--approve"], {"a": "first", "b": "second"}),
        (["--reject", "no"], {}),
        (
            ["--edit", json.dumps({"call_a": {"title": "a", "body": "x"}})],
            {"a": "x", "b": "second"},
        ),
    ):
        notes_turn(both)
        gate = cli("run", "assistant", "two notes")
        assert gate["status"] == "interrupted"
        assert [c["tool"] for c in gate["pending"]["calls"]] == ["write_note", "write_note"]
        assert cli("resume", gate["thread_id"], *flag)["status"] == "completed"
        assert both.notes() == expected, flag


def test_draw_each_project_with_and_without_a_thread_offline(
    both: Both, cli: Callable[..., Any]
) -> None:
    orch = both.gw.orch
    notes_turn(both)
    threads = {
        "report": orch.invoke("report", {"topic": "t", "depth": 3}).thread_id,
        "pipeline": orch.invoke("pipeline", {"text": "a b"}).thread_id,
        "configured": orch.invoke("configured", "Ada").thread_id,
        "assistant": orch.invoke("assistant", "two notes").thread_id,  # waits at its gate
    }
    mark = {"mermaid": "classDef visited", "ascii": "visited: "}
    for graph, thread in threads.items():
        for fmt, marker in mark.items():
            plain_text = cli("draw", graph, "--format", fmt)["text"]
            marked = cli("draw", graph, "--format", fmt, "--thread", thread)["text"]
            assert "__start__" in plain_text and marker not in plain_text, (graph, fmt)
            assert marker in marked, (graph, fmt)
    page = cli("draw", "assistant", "-f", "html", "--thread", threads["assistant"])["text"]
    assert page.startswith("<!doctype html>") and "classDef gate" in page
    report = cli("draw", "report", "--thread", threads["report"])["text"]
    assert "outline -. &nbsp;write&nbsp; .-> write;" in report  # the branch names its edge
    assert "class __start__,outline,write,polish\\3acheck,polish\\3asign visited;" in report
    assert "subgraph polish" in report and "expand visited" not in report  # xray: drawn inside
    gate = cli("draw", "assistant", "--thread", threads["assistant"])["text"]
    assert "class HumanInTheLoopMiddleware\\2eafter_model gate;" in gate  # waits for a decision
    assert (
        "steps: outline → write → polish"
        in cli("draw", "report", "-f", "ascii", "--thread", threads["report"])["text"]
    )
    done = orch.resume(
        threads["assistant"], {"decisions": [{"type": "reject"}, {"type": "reject"}]}
    )
    assert done.status == "completed" and both.notes() == {}


def test_create_agent_gate_answered_on_the_review_page(both: Both) -> None:
    import shutil as sh

    from playwright.sync_api import sync_playwright

    notes_turn(both)
    waiting = both.gw.orch.invoke("assistant", "two notes", thread_id="hitl-review")
    assert waiting.status == "interrupted"
    chromium = sh.which("chromium")
    assert chromium, "chromium (Debian package) is installed by scripts/test"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.goto(f"{both.gw.url}/review/hitl-review")
        page.wait_for_selector("pre.mermaid svg", timeout=scaled(30_000))
        assert "two notes" in page.inner_text("#conversation")
        calls = page.locator("fieldset.call")
        assert calls.count() == 2
        assert "Writing a note changes the notes folder" in calls.nth(0).inner_text()
        calls.nth(0).locator("input[value=approve]").check()
        calls.nth(1).locator("input[value=edit]").check()
        calls.nth(1).locator("textarea.edit-args").fill('{"title": "b", "body": "from review"}')
        (ROOT / "tests" / "artifacts").mkdir(exist_ok=True)
        page.screenshot(
            path=str(ROOT / "tests" / "artifacts" / "review-page-hitl.png"), full_page=True
        )
        page.click("#submit")
        page.wait_for_selector("#answer", timeout=scaled(30_000))
        answer = page.inner_text("#answer")
        browser.close()
    assert "Both notes are written." in answer
    assert both.notes() == {"a": "first", "b": "from review"}
