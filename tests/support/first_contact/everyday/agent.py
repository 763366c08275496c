"""The project's graphs: a compiled graph, a factory taking a config, an async graph, one
that uses the store as the memory-agent template does, and one with a long node."""

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from state import State

import checkpoints
import graphs
from nodes import agreet, configured, greet, nap, remember

assert checkpoints.MARKER and graphs.MARKER  # the project's own modules, not graphwright's


def _one(name: str, node: object) -> StateGraph:
    builder = StateGraph(State)
    builder.add_node(name, node)  # type: ignore[call-overload]
    builder.add_edge(START, name)
    builder.add_edge(name, END)
    return builder


graph = _one("greet", greet).compile()
async_graph = _one("agreet", agreet).compile()
memory_graph = _one("remember", remember).compile()
slow_graph = _one("nap", nap).compile()


def make_graph(config: RunnableConfig):
    """A factory: LangGraph builds the graph per run from the run's config."""
    return _one("configured", configured).compile()
