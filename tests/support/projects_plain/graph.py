"""A LangGraph project written the way LangGraph's docs write one: a StateGraph, no LangChain."""

from __future__ import annotations

import os
from typing import Annotated, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph


def add(left: list[str], right: list[str]) -> list[str]:
    return left + right


class State(TypedDict):
    """What each step appends to."""

    items: Annotated[list[str], add]  # every step's words, in order


def greet(state: State) -> dict[str, list[str]]:
    return {"items": [os.environ.get("PLAIN_GREETING", "?")]}


def builder() -> StateGraph[State]:
    flow = StateGraph(State)
    flow.add_node("greet", greet)
    flow.add_edge(START, "greet")
    flow.add_edge("greet", END)
    return flow


graph = builder().compile()


def make_graph() -> CompiledStateGraph[State]:
    """A factory taking nothing."""
    return builder().compile()


async def amake_graph() -> StateGraph[State]:
    """An async factory returning the uncompiled builder."""
    return builder()


async def amake_configured(config: RunnableConfig) -> CompiledStateGraph[State]:
    """An async factory taking the run's config."""
    return builder().compile()
