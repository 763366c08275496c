"""The graphs `bench.server` runs on both servers, written as one `langgraph.json` project.

And the scripted OpenAI-compatible model the chat graphs call.

`three` is a three-node graph with no model. `chat_0ms` and `chat_200ms` are one
`ChatOpenAI` agent (model, `ToolNode`, model) whose model answers after 0 ms or after
200 ms: a tool call (a fresh id each time) first, then, given the tool's result, a final
answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from graphwright.testing.scripted_openai import Reply, ScriptedOpenAI, call

THREE = """
from typing_extensions import TypedDict
from langgraph.graph import StateGraph, START, END

class State(TypedDict):
    n: int

def step(state: State) -> State:
    return {"n": state["n"] + 1}

builder = StateGraph(State)
for name in ("a", "b", "c"):
    builder.add_node(name, step)
builder.add_edge(START, "a")
builder.add_edge("a", "b")
builder.add_edge("b", "c")
builder.add_edge("c", END)
graph = builder.compile()
"""
CHAT = '''
import os

from langchain_core.messages import SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

MARKER = "bench-agent"


@tool
def lookup(order: str) -> str:
    """The status of an order."""
    return f"order {order}: shipped"


def build(url_variable):
    model = ChatOpenAI(model="scripted", base_url=os.environ[url_variable], api_key="bench",
                       max_retries=0, timeout=30).bind_tools([lookup])

    async def agent(state: MessagesState):
        return {"messages": [await model.ainvoke([SystemMessage(MARKER), *state["messages"]])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([lookup]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile()


fast = build("GW_BENCH_MODEL_0MS")
slow = build("GW_BENCH_MODEL_200MS")
'''
MARKER = "bench-agent"
GRAPHS = {"three": "./three.py:graph", "chat_0ms": "./chat.py:fast", "chat_200ms": "./chat.py:slow"}
LATENCY_S = {"GW_BENCH_MODEL_0MS": 0.0, "GW_BENCH_MODEL_200MS": 0.2}
INPUTS: dict[str, dict[str, Any]] = {
    "three": {"n": 0},
    "chat_0ms": {"messages": [{"role": "user", "content": "Where is order A1001?"}]},
}
INPUTS["chat_200ms"] = INPUTS["chat_0ms"]


def write(project: Path) -> Path:
    """The project's files under `project`; returns its `langgraph.json`."""
    (project / "three.py").write_text(THREE)
    (project / "chat.py").write_text(CHAT)
    config = project / "langgraph.json"
    config.write_text(json.dumps({"dependencies": ["."], "graphs": GRAPHS}))
    return config


def answer(body: dict[str, Any]) -> Reply:
    """A tool call until the conversation holds the tool's result, then the final answer."""
    if any(m.get("role") == "tool" for m in body.get("messages", [])):
        return Reply(content="Order A1001 has shipped.", chunks=5)
    return Reply(tool_calls=[call("lookup", {"order": "A1001"})])  # no id: a fresh one


def finished(graph: str, values: Any) -> bool:
    """Whether a run's final values are what the graph ends with."""
    if not isinstance(values, dict):
        return False
    if graph == "three":
        return values.get("n") == 3
    messages = values.get("messages") or []
    return len(messages) == 4 and "shipped" in str(messages[-1].get("content"))


@contextmanager
def models() -> Iterator[dict[str, str]]:
    """The scripted models, one per latency; yields the environment the graphs read."""
    with ExitStack() as stack:
        env = {}
        for variable, latency_s in LATENCY_S.items():
            server = stack.enter_context(ScriptedOpenAI(latency_s=latency_s))
            server.respond(MARKER, answer)
            env[variable] = server.base_url
        yield env
