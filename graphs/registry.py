"""Named graphs: what the API, CLI and HTTP service can run. Users register their own."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import redis
from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph
from pydantic import BaseModel, ConfigDict, Field

from checkpoints.errors import UserError
from checkpoints.keys import Keys
from graphs.agent import build_agent_graph, start_input
from nodes.deps import Limits
from tools.builtin import build_registry
from tools.policy import Policy
from tools.registry import ToolRegistry

Graph = CompiledStateGraph[Any, Any, Any, Any]


class RunInput(BaseModel):
    """What a run is asked to do: a goal, and constraints no step may drop."""

    model_config = ConfigDict(extra="forbid")

    goal: str = Field(min_length=1, max_length=20_000)
    constraints: list[str] = Field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class GraphContext:
    """Services a builder compiles a graph with."""

    model: BaseChatModel
    redis_client: redis.Redis
    keys: Keys
    checkpointer: BaseCheckpointSaver[Any]
    limits: Limits
    policy: Policy | None = None


Builder = Callable[[GraphContext], Graph]
InputAdapter = Callable[[RunInput], dict[str, Any]]


def agent_input(run: RunInput) -> dict[str, Any]:
    return start_input(run.goal, run.constraints)


@dataclass(frozen=True, kw_only=True)
class GraphSpec:
    name: str
    description: str
    build: Builder
    make_input: InputAdapter = agent_input
    tools: Callable[[], ToolRegistry] = build_registry  # validates edited arguments at a gate


class GraphRegistry:
    """Graph builders by name."""

    def __init__(self) -> None:
        self._specs: dict[str, GraphSpec] = {}

    def register(
        self, name: str, build: Builder, *, description: str = "",
        make_input: InputAdapter = agent_input, tools: Callable[[], ToolRegistry] = build_registry,
    ) -> None:
        self._specs[name] = GraphSpec(name=name, description=description, build=build,
                                      make_input=make_input, tools=tools)

    def get(self, name: str) -> GraphSpec:
        spec = self._specs.get(name)
        if spec is None:
            raise UserError(f"no graph named {name!r}; registered graphs: {', '.join(self.names())}")
        return spec

    def names(self) -> list[str]:
        return sorted(self._specs)

    def __iter__(self) -> Iterator[GraphSpec]:
        return iter(self._specs[n] for n in self.names())


def build_agent(ctx: GraphContext) -> Graph:
    return build_agent_graph(
        tools=build_registry(), model=ctx.model, redis_client=ctx.redis_client,
        policy=ctx.policy, limits=ctx.limits, keys=ctx.keys, checkpointer=ctx.checkpointer,
    )


def default_registry() -> GraphRegistry:
    """The graphs graphwright ships."""
    reg = GraphRegistry()
    reg.register("agent", build_agent,
                 description="plan/act/observe/compact/human_gate agent with the built-in tools")
    return reg
