"""Named graphs: what the API, CLI and HTTP service can run. Users register their own."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from graphwright.graphs.agent import build_agent_graph, start_input
from graphwright.graphs.context import Graph, GraphContext, RunInput
from graphwright.graphs.orchestrator import build_orchestrator_graph, orchestrator_input
from graphwright.graphs.order_support import build_order_support_graph, order_input
from graphwright.tools.builtin import build_registry
from graphwright.tools.registry import ToolRegistry
from graphwright.tools.spec import ToolSpec
from graphwright_errors import NotFoundError

__all__ = [
    "Graph",
    "GraphContext",
    "GraphRegistry",
    "GraphSpec",
    "RunInput",
    "agent_tools",
    "default_registry",
]


Builder = Callable[[GraphContext], Graph]
InputAdapter = Callable[[RunInput], dict[str, Any]]


def agent_input(run: RunInput) -> dict[str, Any]:
    return start_input(run.goal, run.constraints)


@dataclass(frozen=True, kw_only=True)
class GraphSpec:
    """A registered graph: how to build it, what it takes as input, which tools it may call."""

    name: str
    description: str
    build: Builder
    make_input: InputAdapter | None = agent_input  # None: the graph takes its own input as given
    tools: Callable[[], ToolRegistry] = build_registry  # validates edited arguments at a gate
    uses_memory: bool = False  # its input takes the recalled long-term memories
    per_config: bool = False  # built again for each run configuration (a factory of config)

    @property
    def native_input(self) -> bool:
        """Whether the graph takes its own input as given (a langgraph.json graph)."""
        return self.make_input is None


class GraphRegistry:
    """Graph builders by name."""

    def __init__(self) -> None:
        self._specs: dict[str, GraphSpec] = {}

    def register(
        self,
        name: str,
        build: Builder,
        *,
        description: str = "",
        make_input: InputAdapter | None = agent_input,
        tools: Callable[[], ToolRegistry] = build_registry,
        uses_memory: bool = False,
        per_config: bool = False,
    ) -> None:
        self._specs[name] = GraphSpec(
            name=name,
            description=description,
            build=build,
            make_input=make_input,
            tools=tools,
            uses_memory=uses_memory,
            per_config=per_config,
        )

    def get(self, name: str) -> GraphSpec:
        spec = self._specs.get(name)
        if spec is None:
            raise NotFoundError(
                f"no graph named {name!r}; registered graphs: {', '.join(self.names())}"
            )
        return spec

    def names(self) -> list[str]:
        return sorted(self._specs)

    def __iter__(self) -> Iterator[GraphSpec]:
        return iter(self._specs[n] for n in self.names())


def agent_tools(extra: Iterable[ToolSpec] = ()) -> ToolRegistry:
    """The built-in tools and the configured ones (MCP servers' tools, named `server.tool`)."""
    registry = build_registry()
    for spec in extra:
        registry.add(spec)
    return registry


def build_agent(ctx: GraphContext) -> Graph:
    return build_agent_graph(
        tools=agent_tools(ctx.extra_tools),
        model=ctx.model,
        redis_client=ctx.redis_client,
        policy=ctx.policy,
        limits=ctx.limits,
        keys=ctx.keys,
        checkpointer=ctx.checkpointer,
        store=ctx.store,
    )


def default_registry() -> GraphRegistry:
    """The graphs graphwright ships."""
    reg = GraphRegistry()
    reg.register(
        "agent",
        build_agent,
        description="plan/act/observe/compact/human_gate agent with the built-in tools",
        uses_memory=True,
    )
    reg.register(
        "orchestrator",
        build_orchestrator_graph,
        make_input=orchestrator_input,
        description="splits the task across worker agents (notes, orders, calendar)",
    )
    reg.register(
        "order_support",
        build_order_support_graph,
        make_input=order_input,
        description="order inquiry workflow: code routes on status, the model phrases",
    )
    return reg
