"""A graph factory taking the run's config, imported as module:attr from the dependencies."""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph


def make_graph(config: RunnableConfig) -> CompiledStateGraph:  # type: ignore[type-arg]
    greeting = (config.get("configurable") or {}).get("greeting", "Hello")

    def greet(state: MessagesState) -> dict[str, list[dict[str, str]]]:
        name = state["messages"][-1].content
        return {"messages": [{"role": "assistant", "content": f"{greeting}, {name}!"}]}

    builder = StateGraph(MessagesState)
    builder.add_node("greet", greet)
    builder.add_edge(START, "greet")
    return builder.compile()
