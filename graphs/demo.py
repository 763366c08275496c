"""A two-step demo graph that stops before its second step: checkpoint, stop, resume."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph


class DemoState(TypedDict):
    """State of the demo run."""

    log: Annotated[list[str], operator.add]  # one line per step, in order
    pid: Annotated[list[int], operator.add]  # the process that ran each step


def build_demo_graph(saver: BaseCheckpointSaver[Any]) -> CompiledStateGraph[Any, Any, Any, Any]:
    import os

    def prepare(state: DemoState) -> dict[str, Any]:
        return {"log": ["prepared the report"], "pid": [os.getpid()]}

    def publish(state: DemoState) -> dict[str, Any]:
        return {"log": ["published the report"], "pid": [os.getpid()]}

    builder = StateGraph(DemoState)
    builder.add_node("prepare", prepare)
    builder.add_node("publish", publish)
    builder.add_edge(START, "prepare")
    builder.add_edge("prepare", "publish")
    builder.add_edge("publish", END)
    return builder.compile(checkpointer=saver, interrupt_before=["publish"])
