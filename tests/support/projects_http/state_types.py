"""One small graph per kind of state LangGraph accepts, for the HTTP input checks: a
`typing.TypedDict` (pydantic refuses it before Python 3.12), a
`typing_extensions.TypedDict`, a dataclass and a pydantic model, each with an
`Annotated` reducer; and one that shows the request headers its run was given."""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict

import typing_extensions
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel


class PlainState(TypedDict, total=False):
    items: Annotated[list[str], operator.add]
    count: int


class ExtState(typing_extensions.TypedDict, total=False):
    items: Annotated[list[str], operator.add]
    count: int


@dataclass
class DataState:
    items: Annotated[list[str], operator.add] = field(default_factory=list)
    count: int = 0


class ModelState(BaseModel):
    items: Annotated[list[str], operator.add] = []
    count: int = 0


def step(state: Any) -> dict[str, Any]:
    return {"items": ["step"], "count": 1}


def build(state: Any, name: str | None = None) -> Any:
    g = StateGraph(state)
    g.add_node("step", step)
    g.add_edge(START, "step")
    g.add_edge("step", END)
    return g.compile(name=name)


typed_dict = build(PlainState)
extensions_typed_dict = build(ExtState)
dataclass_state = build(DataState, name="data graph")  # its assistant is named so
pydantic_state = build(ModelState)


def seen_headers(state: PlainState, config: RunnableConfig) -> dict[str, Any]:
    conf = config.get("configurable") or {}
    return {"items": [f"{k}={conf[k]}" for k in sorted(conf) if k.startswith(("x-", "user-agent"))]}


def build_headers() -> Any:
    g = StateGraph(ExtState)
    g.add_node("seen_headers", seen_headers)
    g.add_edge(START, "seen_headers")
    g.add_edge("seen_headers", END)
    return g.compile()


headers = build_headers()
