"""The error tree: one root below every layer, storage errors in storage terms, and a tool's
failure that escapes its executor failing the run instead of passing for graphwright's own."""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

import graphwright
import graphwright.checkpoints.errors as storage
import graphwright_errors as root
from graphwright import GraphContext, GraphRegistry, Orchestrator, RunInput, Settings
from graphwright.offline import OfflineChatModel
from graphwright.tools.errors import ToolFailure, Unavailable


class Lookup(TypedDict, total=False):
    goal: str
    answer: str


def build_lookup(ctx: GraphContext) -> Any:
    """A graph that calls a tool function itself, outside any executor."""

    def look(state: Lookup) -> dict[str, Any]:
        raise Unavailable("the inventory service is down")

    g = StateGraph(Lookup)
    g.add_node("look", look)
    g.add_edge(START, "look")
    g.add_edge("look", END)
    return g.compile(checkpointer=ctx.checkpointer)


def test_an_escaped_tool_failure_fails_its_run_and_is_not_raised(settings: Settings) -> None:
    graphs = GraphRegistry()
    graphs.register("lookup", build_lookup, make_input=lambda run: {"goal": run.goal})
    orch = Orchestrator(settings=settings, model=OfflineChatModel(), graphs=graphs)
    result = orch.invoke("lookup", RunInput(goal="stock of A1"))
    assert result.status == "failed"
    assert result.error == "Unavailable: the inventory service is down"
    assert orch.meta(result.thread_id)["status"] == "failed"
    orch.client.close()


def test_one_root_every_layer_imports_and_the_public_names_stay() -> None:
    assert not issubclass(ToolFailure, root.GraphwrightError)  # an observation, not our error
    for name in ("GraphwrightError", "UserError", "ConfigurationError", "InfrastructureError"):
        assert getattr(graphwright, name) is getattr(root, name)
    for error in (
        storage.RedisUnavailableError,
        storage.LockLostError,
        storage.CorruptCheckpointError,
    ):
        assert issubclass(error, root.InfrastructureError)
    assert issubclass(storage.EvictingServerError, root.ConfigurationError)
