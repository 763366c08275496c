"""A plain LangGraph graph, as LangGraph's docs write one: no LangChain, no graphwright."""

from typing import TypedDict

from langgraph.graph import END, START, StateGraph


class State(TypedDict):
    topic: str
    steps: list[str]


def research(state: State) -> dict:
    return {"steps": [*state.get("steps", []), f"researched {state['topic']}"]}


def write(state: State) -> dict:
    return {"steps": [*state["steps"], "written"]}


builder = StateGraph(State)
builder.add_node("research", research)
builder.add_node("write", write)
builder.add_edge(START, "research")
builder.add_edge("research", "write")
builder.add_edge("write", END)
graph = builder.compile()
