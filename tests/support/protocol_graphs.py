"""Plain LangGraph graphs served by both `langgraph dev` (the reference) and
`graphwright serve` in the protocol tests: one that interrupts, one with a streaming
chat model, one with a subgraph, and one whose node raises.

The reference imports the compiled graphs below; graphwright registers the same builders
with its own checkpointer (`GRAPHWRIGHT_GRAPHS=tests.support.protocol_graphs:register`).
"""

from __future__ import annotations

import operator
import os
import time
from typing import Annotated, Any

from langchain_core.messages import AnyMessage
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import interrupt
from typing_extensions import TypedDict

CHAT_URL_ENV = "PROTOCOL_CHAT_URL"


class State(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    steps: Annotated[list[str], operator.add]


def first(state: State) -> dict[str, Any]:
    get_stream_writer()({"progress": "first"})
    return {"steps": ["first"]}


def ask(state: State) -> dict[str, Any]:
    answer = interrupt({"question": "go on?"})
    return {"steps": [f"answer:{answer}"]}


def last(state: State) -> dict[str, Any]:
    return {"steps": ["last"]}


def interrupting_builder() -> StateGraph[Any]:
    g = StateGraph(State)
    g.add_node("first", first)
    g.add_node("ask", ask)
    g.add_node("last", last)
    g.add_edge(START, "first")
    g.add_edge("first", "ask")
    g.add_edge("ask", "last")
    g.add_edge("last", END)
    return g


def reply(state: State) -> dict[str, Any]:
    from langchain_openai import ChatOpenAI

    model = ChatOpenAI(
        base_url=os.environ.get(CHAT_URL_ENV, "http://127.0.0.1:9/v1"),
        api_key="test-key",
        model="fixed",
        streaming=True,
    )  # type: ignore[arg-type]
    return {"messages": [model.invoke(state.get("messages") or [])]}


def chat_builder() -> StateGraph[Any]:
    g = StateGraph(State)
    g.add_node("reply", reply)
    g.add_edge(START, "reply")
    g.add_edge("reply", END)
    return g


def inner_a(state: State) -> dict[str, Any]:
    return {"steps": ["inner_a"]}


def inner_b(state: State) -> dict[str, Any]:
    get_stream_writer()({"progress": "inner_b"})
    return {"steps": ["inner_b"]}


def subgraph_builder() -> StateGraph[Any]:
    inner = StateGraph(State)
    inner.add_node("inner_a", inner_a)
    inner.add_node("inner_b", inner_b)
    inner.add_edge(START, "inner_a")
    inner.add_edge("inner_a", "inner_b")
    inner.add_edge("inner_b", END)
    outer = StateGraph(State)
    outer.add_node("first", first)
    outer.add_node("inner", inner.compile())
    outer.add_node("last", last)
    outer.add_edge(START, "first")
    outer.add_edge("first", "inner")
    outer.add_edge("inner", "last")
    outer.add_edge("last", END)
    return outer


def boom(state: State) -> dict[str, Any]:
    raise ValueError("boom happened")


def raising_builder() -> StateGraph[Any]:
    g = StateGraph(State)
    g.add_node("first", first)
    g.add_node("boom", boom)
    g.add_edge(START, "first")
    g.add_edge("first", "boom")
    g.add_edge("boom", END)
    return g


def tick(state: State) -> dict[str, Any]:
    time.sleep(0.1)
    return {"steps": ["tick"]}


def slow_builder() -> StateGraph[Any]:
    """Ticks 100 times, a tenth of a second each: long enough to cancel mid-run."""
    g = StateGraph(State)
    g.add_node("tick", tick)
    g.add_edge(START, "tick")
    g.add_conditional_edges("tick", lambda s: END if len(s.get("steps") or []) >= 100 else "tick")
    return g


BUILDERS = {
    "interrupting": interrupting_builder,
    "chat": chat_builder,
    "subgraph": subgraph_builder,
    "raising": raising_builder,
    "slow": slow_builder,
}

interrupting = interrupting_builder().compile()
chat = chat_builder().compile()
subgraph = subgraph_builder().compile()
raising = raising_builder().compile()
slow = slow_builder().compile()


def register(graphs: Any) -> None:
    for name, builder in BUILDERS.items():
        graphs.register(
            name, lambda ctx, b=builder: b().compile(checkpointer=ctx.checkpointer), make_input=None
        )
