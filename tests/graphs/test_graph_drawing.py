"""Every graph compiles, and its drawing shows its nodes and edges."""

from __future__ import annotations

import redis

from graphwright.graphs.agent import build_agent_graph
from graphwright.offline import OfflineChatModel
from graphwright.tools.builtin import build_registry

AGENT_EDGES = {
    ("__start__", "plan"),
    ("plan", "act"),
    ("plan", "human_gate"),
    ("plan", "__end__"),
    ("human_gate", "act"),
    ("human_gate", "plan"),
    ("human_gate", "observe"),
    ("act", "observe"),
    ("act", "human_gate"),
    ("observe", "plan"),
    ("observe", "compact"),
    ("observe", "__end__"),
    ("compact", "plan"),
}


def test_agent_graph_draws_its_five_nodes_and_every_edge(client: redis.Redis) -> None:
    graph = build_agent_graph(tools=build_registry(), model=OfflineChatModel(), redis_client=client)
    drawn = graph.get_graph()
    assert set(drawn.nodes) == {
        "__start__",
        "plan",
        "act",
        "observe",
        "compact",
        "human_gate",
        "__end__",
    }
    assert {(e.source, e.target) for e in drawn.edges} == AGENT_EDGES
    mermaid = drawn.draw_mermaid()
    for node in ("plan", "act", "observe", "compact", "human_gate"):
        assert node in mermaid
    assert "observe -.-> compact" in mermaid and "act -.-> observe" in mermaid


def test_every_registered_graph_compiles_and_draws(client: redis.Redis) -> None:
    from graphwright.checkpoints.keys import Keys
    from graphwright.checkpoints.redis import RedisSaver
    from graphwright.graphs.registry import GraphContext, default_registry
    from graphwright.nodes.deps import Limits

    ctx = GraphContext(
        model=OfflineChatModel(),
        redis_client=client,
        keys=Keys(),
        checkpointer=RedisSaver(client),
        limits=Limits(),
    )
    expected = {
        "agent": {"plan", "act", "observe", "compact", "human_gate"},
        "order_support": {"extract", "lookup", "track", "phrase", "ask", "not_found", "failed"},
        "orchestrator": {
            "split",
            "synthesize",
            "notes_researcher:plan",
            "order_desk:act",
            "scheduler:human_gate",
        },
    }
    for spec in default_registry():
        drawn = spec.build(ctx).get_graph(xray=True)
        assert expected[spec.name] <= set(drawn.nodes), spec.name
        assert drawn.draw_mermaid().count("-->") + drawn.draw_mermaid().count("-.->") == len(
            drawn.edges
        )
