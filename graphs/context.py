"""What a graph builder is given and what a run is asked: shared by every graph module."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import redis
from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import BaseStore
from pydantic import BaseModel, ConfigDict, Field

from graphwright.checkpoints.keys import Keys
from graphwright.nodes.deps import Limits
from graphwright.tools.policy import Policy
from graphwright.tools.spec import ToolSpec

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
    store: BaseStore | None = None  # long-term memory, handed to nodes as LangGraph's store
    configurable: dict[str, Any] | None = None  # the run's, for a graph built per configuration
    extra_tools: tuple[ToolSpec, ...] = ()  # tools from configuration (MCP servers) for the agent
