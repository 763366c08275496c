"""Reading langgraph.json: env, dependencies, TTLs, store index, the graph forms, and the errors."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_sync_client

from graphwright import Orchestrator
from graphwright.project import load_project, read_env_file
from graphwright.settings import Settings
from graphwright.testing.service import running
from graphwright_errors import ConfigurationError, UserError

GRAPH = """
from typing_extensions import TypedDict
from langgraph.graph import START, StateGraph
import helpers


class State(TypedDict):
    text: str
    said: str


def say(state: State) -> dict[str, str]:
    return {"said": f"{helpers.GREETING} {state['text']}"}


builder = StateGraph(State)
builder.add_node("say", say)
builder.add_edge(START, "say")
graph = builder  # an uncompiled StateGraph: graphwright compiles it
"""

HELPERS = """
GREETING = "hi"
GRAPH_TEXT = "not a graph"


def make():
    from graph_module import builder
    return builder.compile()
"""

EMBED = """
def embed(texts):
    return [[1.0, 0.0] if "redis" in t else [0.0, 1.0] for t in texts]
"""


def write_project(root: Path, config: dict[str, Any]) -> Path:
    (root / "lib").mkdir(parents=True, exist_ok=True)
    (root / "lib" / "helpers.py").write_text(HELPERS)
    (root / "lib" / "graph_module.py").write_text(GRAPH)
    (root / "graph.py").write_text(GRAPH)
    (root / "embed.py").write_text(EMBED)
    path = root / "langgraph.json"
    path.write_text(json.dumps(config))
    return path


def unset_later(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    """Make sure the variables are unset now and again after the test (from_config sets them)."""
    for name in names:
        monkeypatch.setenv(name, "x")
        monkeypatch.delenv(name)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    unset_later(monkeypatch, "GW_PROJECT_COLOUR")
    monkeypatch.setenv("GW_PROJECT_SHAPE", "set by the environment")
    yield write_project(
        tmp_path,
        {
            "dependencies": ["./lib"],
            "graphs": {"say": "./graph.py:graph", "made": "helpers:make"},
            "env": {"GW_PROJECT_COLOUR": "teal", "GW_PROJECT_SHAPE": "from the project"},
            "checkpointer": {"ttl": {"strategy": "delete", "default_ttl": 1}},
            "store": {
                "ttl": {"default_ttl": 5},
                "index": {"dims": 2, "embed": "./embed.py:embed", "fields": ["text"]},
            },
        },
    )


def test_env_dependencies_ttls_and_store_index_are_applied(
    project: Path, settings: Settings
) -> None:
    import os

    orch = Orchestrator.from_config(project, settings=settings)
    assert os.environ["GW_PROJECT_COLOUR"] == "teal"
    assert os.environ["GW_PROJECT_SHAPE"] == "set by the environment"  # the environment wins
    result = orch.invoke("say", {"text": "there"})
    assert orch.state(result.thread_id).values["said"] == "hi there"
    assert orch.state(orch.invoke("made", {"text": "again"}).thread_id).values["said"] == "hi again"
    assert orch.saver.ttl_s == 60
    ttls = {
        k: orch.client.ttl(k)
        for k in orch.client.scan_iter(f"{settings.key_prefix}:*{result.thread_id}*")
    }
    assert ttls and all(0 < t <= 60 for t in ttls.values()), ttls
    assert orch.store.ttl_config == {"default_ttl": 5}
    orch.store.put(("docs",), "a", {"text": "about redis"})
    orch.store.put(("docs",), "b", {"text": "about gardens"})
    assert [i.key for i in orch.store.search(("docs",), query="redis streams")] == ["a", "b"]


def test_from_env_reads_the_project_in_the_working_directory(
    project: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REDIS_URL", str(settings.redis_url))
    monkeypatch.setenv("GRAPHWRIGHT_KEY_PREFIX", settings.key_prefix)
    monkeypatch.chdir(project.parent)
    assert "say" in Orchestrator.from_env().graphs.names()
    monkeypatch.chdir(project.parent / "lib")
    assert "say" not in Orchestrator.from_env().graphs.names()
    monkeypatch.setenv("GRAPHWRIGHT_CONFIG", str(project))
    assert "say" in Orchestrator.from_env().graphs.names()


def test_a_plain_string_is_refused_by_a_graph_without_messages(
    project: Path, settings: Settings
) -> None:
    orch = Orchestrator.from_config(project, settings=settings)
    with pytest.raises(UserError, match=r"takes its own input \(said, text\)"):
        orch.invoke("say", "hello")


def test_a_background_run_of_a_project_graph_on_the_worker(
    project: Path, settings: Settings
) -> None:
    with running(Orchestrator.from_config(project, settings=settings), worker=True) as svc:
        client = get_sync_client(url=svc.url, api_key=None)
        thread = client.threads.create()["thread_id"]
        run = client.runs.create(thread, "say", input={"text": "from the queue"})
        client.runs.join(thread, run["run_id"])
        assert client.threads.get_state(thread)["values"]["said"] == "hi from the queue"
        schema = client.assistants.get_schemas("say")["input_schema"]
        assert set(schema["properties"]) == {"text", "said"}


@pytest.mark.parametrize(
    ("graphs", "message"),
    [
        ({"g": "./graph.py:nothing"}, "has no attribute 'nothing'"),
        ({"g": "./missing.py:graph"}, "does not exist"),
        ({"g": "no_such_module_here:graph"}, "cannot be imported"),
        ({"g": "graph"}, "write it as ./path.py:attr or module:attr"),
        ({"g": "helpers:GRAPH_TEXT"}, "is a str, not a graph"),
    ],
)
def test_a_bad_graph_entry_names_the_fix(
    tmp_path: Path, settings: Settings, graphs: dict[str, str], message: str
) -> None:
    path = write_project(tmp_path, {"graphs": graphs, "dependencies": ["./lib"]})
    with pytest.raises(ConfigurationError, match=message):
        Orchestrator.from_config(path, settings=settings).compiled("g")


def test_a_malformed_file_names_the_field(tmp_path: Path) -> None:
    (tmp_path / "langgraph.json").write_text('{"graphs": {}}')
    with pytest.raises(ConfigurationError, match="graphs"):
        load_project(tmp_path / "langgraph.json")
    (tmp_path / "langgraph.json").write_text("{nope")
    with pytest.raises(ConfigurationError, match="cannot read"):
        load_project(tmp_path / "langgraph.json")


def test_an_env_file_is_read_like_langgraph_dev_reads_it(tmp_path: Path) -> None:
    (tmp_path / ".env.project").write_text(
        textwrap.dedent("""
        # comment
        export A=1
        B="two words"
        C='3'
    """)
    )
    (tmp_path / "langgraph.json").write_text(
        json.dumps({"graphs": {"g": "./g.py:g"}, "env": ".env.project"})
    )
    assert load_project(tmp_path / "langgraph.json").env() == {"A": "1", "B": "two words", "C": "3"}
    assert read_env_file(tmp_path / ".env.project")["B"] == "two words"


def test_a_missing_env_file_reads_as_no_variables_like_langgraph_dev(tmp_path: Path) -> None:
    """LangGraph's templates all name a git-ignored `.env` that a fresh clone lacks; the
    reference serves them with the environment's variables, and so must graphwright."""
    (tmp_path / "langgraph.json").write_text(
        json.dumps({"graphs": {"g": "./g.py:g"}, "env": ".env"})
    )
    assert load_project(tmp_path / "langgraph.json").env() == {}


SCHEMAS = """
from typing_extensions import TypedDict
from langgraph.graph import START, StateGraph


class In(TypedDict):
    topic: str


class Out(TypedDict):
    info: str


class State(In, Out):
    notes: list[str]


def research(state: State) -> dict[str, list[str]]:
    return {"notes": [f"read about {state['topic']}"]}


def extract(state: State) -> dict[str, str]:
    return {"info": state["notes"][-1]}


graph = (StateGraph(State, input_schema=In, output_schema=Out)
         .add_node(research).add_node(extract)
         .add_edge(START, "research").add_edge("research", "extract").compile())
"""


def test_values_stream_only_the_output_schema_when_it_changes_like_the_reference(
    tmp_path: Path, settings: Settings
) -> None:
    """LangGraph's data-enrichment template has an output schema: `langgraph dev` streams
    `values` of the output channels after the steps that write them (no event for the
    input or a step that writes only inner keys), never the inner state."""
    (tmp_path / "graph.py").write_text(SCHEMAS)
    (tmp_path / "langgraph.json").write_text(json.dumps({"graphs": {"g": "./graph.py:graph"}}))
    orch = Orchestrator.from_config(tmp_path / "langgraph.json", settings=settings)
    with running(orch) as svc:
        sdk = get_sync_client(url=svc.url, api_key=None)
        values = [
            part.data
            for part in sdk.runs.stream(None, "g", input={"topic": "owls"}, stream_mode="values")
            if part.event == "values"
        ]
    assert values == [{"info": "read about owls"}]
