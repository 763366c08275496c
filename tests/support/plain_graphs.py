"""Plain LangGraph graphs (no model, no tools) that graphwright and the reference server both
serve: `GRAPHWRIGHT_GRAPHS=tests.support.plain_graphs:register` here,
`tests/support/plain_graphs.py:graph` in the reference's `langgraph.json`.

Each run of `counter` appends its thread id to the file named by `GW_TEST_EFFECTS` (if
set): an effect outside Redis that the cron tests count.
"""

from __future__ import annotations

import operator
import os
from typing import Annotated, Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from graphwright.graphs.registry import Graph, GraphRegistry, RunInput


class Counter(TypedDict, total=False):
    items: Annotated[list[str], operator.add]  # one entry per step, appended
    count: int  # steps so far


def step(state: Counter, config: RunnableConfig) -> dict[str, Any]:
    effects = os.environ.get("GW_TEST_EFFECTS")
    if effects:
        with open(effects, "a", encoding="utf-8") as out:
            out.write(f"{config['configurable']['thread_id']}\n")
    label = (config.get("configurable") or {}).get("label")  # an assistant's or a run's config
    return {"items": ["step", *([label] if label else [])], "count": state.get("count", 0) + 1}


def build(checkpointer: BaseCheckpointSaver[Any] | None = None) -> Graph:
    g = StateGraph(Counter)
    g.add_node("step", step)
    g.add_edge(START, "step")
    g.add_edge("step", END)
    return g.compile(checkpointer=checkpointer, name="counter")


graph = build()  # what the reference server loads


def register(graphs: GraphRegistry) -> None:
    def make_input(run: RunInput) -> dict[str, Any]:
        return {"items": [run.goal]}

    graphs.register("counter", lambda ctx: build(ctx.checkpointer), make_input=make_input)
