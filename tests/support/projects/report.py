"""A plain StateGraph with its own input and output schemas, as in LangGraph's templates."""

from __future__ import annotations

from typing import Literal

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict


class InputState(TypedDict):
    topic: str
    depth: int


class OutputState(TypedDict):
    report: str


class State(InputState, OutputState):
    outline: list[str]


def outline(state: InputState) -> dict[str, list[str]]:
    return {"outline": [f"{state['topic']}: part {i + 1}" for i in range(state["depth"])]}


def route(state: State) -> Literal["expand", "write"]:
    return "expand" if len(state["outline"]) < 3 else "write"


def expand(state: State) -> dict[str, list[str]]:
    return {"outline": [*state["outline"], f"{state['topic']}: more"]}


def write(state: State) -> dict[str, str]:
    return {"report": " / ".join(state["outline"])}


def check(state: OutputState) -> dict[str, str]:
    return {"report": state["report"].strip()}


def sign(state: OutputState) -> dict[str, str]:
    return {"report": state["report"] + " (signed)"}


# A subgraph: drawn expanded with xray, checkpointed under the parent thread.
polish = StateGraph(OutputState)
polish.add_node("check", check)
polish.add_node("sign", sign)
polish.add_edge(START, "check")
polish.add_edge("check", "sign")


builder = StateGraph(State, input_schema=InputState, output_schema=OutputState)
builder.add_node("outline", outline)
builder.add_node("expand", expand)
builder.add_node("write", write)
builder.add_node("polish", polish.compile())
builder.add_edge(START, "outline")
builder.add_conditional_edges("outline", route)
builder.add_conditional_edges("expand", route)
builder.add_edge("write", "polish")
builder.add_edge("polish", END)
graph = builder.compile()
