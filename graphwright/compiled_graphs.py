"""The Orchestrator's compiled graphs and the tools their runs may call.

A mixin of `Orchestrator`: each graph is built once per graph, limits and (for a
`langgraph.json` factory) configuration, and kept while it is among the newest.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from graphwright.graphs.registry import GraphContext
from graphwright.project import run_configurable

if TYPE_CHECKING:
    import redis
    from langchain_core.language_models import BaseChatModel
    from langchain_core.runnables import RunnableConfig

    from graphwright.checkpoints.keys import Keys
    from graphwright.checkpoints.redis import AsyncRedisSaver
    from graphwright.checkpoints.store import AsyncRedisStore
    from graphwright.graphs.registry import Graph, GraphRegistry, GraphSpec
    from graphwright.nodes.deps import Limits
    from graphwright.tools.mcp_config import ServerConfig
    from graphwright.tools.policy import Policy
    from graphwright.tools.registry import ToolRegistry
    from graphwright.tools.spec import ToolSpec

MAX_COMPILED = 256  # compiled graphs kept, by graph, limits and (for factories) configuration


class CompiledGraphs:
    """The Orchestrator's graphs, compiled on first use, and the tools a run may call."""

    # Set by `Orchestrator.__init__`.
    model: BaseChatModel
    client: redis.Redis
    keys: Keys
    asaver: AsyncRedisSaver
    astore: AsyncRedisStore
    graphs: GraphRegistry
    limits: Limits
    policy: Policy | None
    mcp_servers: dict[str, ServerConfig]
    _limits_json: tuple[Limits, str]
    _compiled: dict[tuple[str, str, str], Graph]
    _extra_tools: tuple[ToolSpec, ...] | None

    def extra_tools(self) -> tuple[ToolSpec, ...]:
        """The MCP servers' tools; the servers start on first use, once per process."""
        if self._extra_tools is None:
            self._extra_tools = ()
            if self.mcp_servers:
                from graphwright.tools.mcp import (
                    tool_specs,  # the MCP SDK only when servers are configured
                )

                self._extra_tools = tuple(tool_specs(self.mcp_servers))
        return self._extra_tools

    def tools(self, graph: str = "agent") -> ToolRegistry:
        """Every tool a run of `graph` may call: its own and the configured ones."""
        registry = self.graphs.get(graph).tools()
        for spec in self.extra_tools():
            if registry.get(spec.name) is None:
                registry.add(spec)
        return registry

    def compiled(self, graph: str, config: RunnableConfig | None = None) -> Graph:
        """The compiled graph registered as `graph` (default limits).

        A graph built from the run's config (a `langgraph.json` factory) is built for
        the `configurable` values of `config`, like `langgraph dev` does per run.
        """
        return self._graph(self.graphs.get(graph), None, config)

    def graph_for(
        self, spec: GraphSpec, limits: Limits | None = None, config: RunnableConfig | None = None
    ) -> Graph:
        """`spec`'s graph compiled for these limits (and, for a factory, this config)."""
        return self._graph(spec, limits, config)

    def _graph_key(
        self, spec: GraphSpec, limits: Limits | None, config: RunnableConfig | None
    ) -> tuple[str, str, str]:
        configurable = run_configurable(config) if spec.per_config else {}
        if limits is None and not configurable:
            if self._limits_json[0] is not self.limits:
                self._limits_json = (self.limits, self.limits.model_dump_json())
            return spec.name, self._limits_json[1], "{}"
        return (
            spec.name,
            (limits or self.limits).model_dump_json(),
            json.dumps(configurable, sort_keys=True, default=str),
        )

    def cached_graph(
        self, spec: GraphSpec, limits: Limits | None, config: RunnableConfig | None = None
    ) -> Graph | None:
        """The graph `_graph` would return, if it is built already (no building here)."""
        return self._compiled.get(self._graph_key(spec, limits, config))

    def _graph(
        self, spec: GraphSpec, limits: Limits | None, config: RunnableConfig | None = None
    ) -> Graph:
        key = self._graph_key(spec, limits, config)
        limits = limits or self.limits
        configurable = run_configurable(config) if spec.per_config else {}
        if key not in self._compiled:
            if len(self._compiled) >= MAX_COMPILED:  # many configurations: forget the oldest
                self._compiled.pop(next(iter(self._compiled)))
            self._compiled[key] = spec.build(
                GraphContext(
                    model=self.model,
                    redis_client=self.client,
                    keys=self.keys,
                    checkpointer=self.asaver,
                    limits=limits,
                    policy=self.policy,
                    store=self.astore,
                    configurable=configurable or None,
                    extra_tools=self.extra_tools(),
                )
            )
        return self._compiled[key]
