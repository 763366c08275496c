"""Graphs written the way LangGraph's templates are: `async def` nodes, and subgraphs
of the other kind (a sync graph over an async one, and the reverse)."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any

from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict


class State(TypedDict, total=False):
    text: str  # what the user asked
    steps: Annotated[list[str], operator.add]  # each node's mark, in order
    inner: list[str]  # the subgraph's marks (its own key, so its output adds no steps twice)
    nap_s: float  # how long the nap graph's node sleeps


class Inner(TypedDict, total=False):
    text: str  # shared with the parent graph
    inner: Annotated[list[str], operator.add]  # the subgraph's marks


async def call_model(state: State) -> dict[str, Any]:
    """The node name of the issue's failing template; asks the model with `ainvoke`."""
    reply = await ChatOpenAI(model="gpt-4o-mini", max_retries=0).ainvoke(state["text"])
    return {"steps": [f"model:{reply.text}"]}


async def settle(state: State) -> dict[str, Any]:
    await asyncio.sleep(0)  # a real suspension point on the loop
    return {"steps": ["settled"]}


async def nap(state: State) -> dict[str, Any]:
    """A node waiting on I/O (a model, an API): the loop runs other runs meanwhile."""
    await asyncio.sleep(state.get("nap_s", 0.5))
    return {"steps": ["napped"]}


def sync_mark(name: str, key: str = "steps") -> Any:
    def mark(state: State) -> dict[str, Any]:
        return {key: [name]}

    return mark


def async_mark(name: str, key: str = "steps") -> Any:
    async def mark(state: State) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {key: [name]}

    return mark


def _chain(*nodes: tuple[str, Any], schema: Any = State) -> StateGraph[Any]:
    builder = StateGraph(schema)
    previous = START
    for name, node in nodes:
        builder.add_node(name, node)
        builder.add_edge(previous, name)
        previous = name
    builder.add_edge(previous, END)
    return builder


async_nodes = _chain(("call_model", call_model), ("settle", settle)).compile()
sync_over_async = _chain(
    ("sync_before", sync_mark("sync_before")),
    (
        "async_sub",
        _chain(("async_inner", async_mark("async_inner", "inner")), schema=Inner).compile(),
    ),
    ("sync_after", sync_mark("sync_after")),
).compile()
async_over_sync = _chain(
    ("async_before", async_mark("async_before")),
    ("sync_sub", _chain(("sync_inner", sync_mark("sync_inner", "inner")), schema=Inner).compile()),
).compile()
nap_graph = _chain(("quick", async_mark("quick")), ("nap", nap)).compile()
