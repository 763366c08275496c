"""A plain LangGraph graph whose one node sleeps as long as its input says: a run longer than a
client's read timeout, for the wait tests.
`GRAPHWRIGHT_GRAPHS=tests.support.sleepy_graphs:register` here,
`tests/support/sleepy_graphs.py:graph` in the reference's `langgraph.json`."""

from __future__ import annotations

import asyncio
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from graphwright.graphs.registry import Graph, GraphRegistry


class Nap(TypedDict, total=False):
    seconds: float  # how long the node sleeps
    woke: bool  # set once it has slept the whole time


async def nap(state: Nap) -> dict[str, Any]:
    """An async node: a cancel stops it at its `await`."""
    await asyncio.sleep(state.get("seconds", 0))
    return {"woke": True}


def build(checkpointer: BaseCheckpointSaver[Any] | None = None) -> Graph:
    g = StateGraph(Nap)
    g.add_node("nap", nap)
    g.add_edge(START, "nap")
    g.add_edge("nap", END)
    return g.compile(checkpointer=checkpointer, name="nap")


graph = build()  # what the reference server loads


def register(graphs: GraphRegistry) -> None:
    graphs.register("nap", lambda ctx: build(ctx.checkpointer), make_input=None)
