"""What the agent's nodes are given: limits (`graphwright.nodes.limits`) and injected services."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable

from graphwright.checkpoints.trace import TraceWriter
from graphwright.nodes.limits import (
    Limits as Limits,  # re-exported: its importers predate nodes.limits
)
from graphwright.nodes.model_call import ModelCall
from graphwright.nodes.prompt import RULES
from graphwright.nodes.tokens import Counter, approximate
from graphwright.tools.approvals import Approvals
from graphwright.tools.executor import ToolExecutor
from graphwright.tools.policy import Policy
from graphwright.tools.registry import ToolRegistry


@dataclass(frozen=True, kw_only=True)
class AgentDeps:
    """Services the nodes use; kept out of state because they cannot be serialized."""

    model: BaseChatModel  # for compaction summaries
    planner: Runnable[LanguageModelInput, BaseMessage]  # the model with the tools bound, once
    registry: ToolRegistry
    executor: ToolExecutor
    approvals: Approvals  # the gate's decisions, kept outside the state act must not trust
    policy: Policy
    limits: Limits
    trace: TraceWriter
    role: str = ""  # a worker's own instructions, added to the system prompt
    clock: Callable[[], float] = field(default=time.monotonic)  # measures active time
    count: Counter = field(default=approximate)  # tokens of a request, the model's way
    rules: str = RULES  # the system prompt's rules for the bound tools (nodes.prompt.rules_for)
    model_call: ModelCall = field(default_factory=ModelCall)  # retries and backoff of model calls
