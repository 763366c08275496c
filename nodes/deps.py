"""What the agent's nodes are given: limits (pydantic, user-facing) and injected services."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable
from pydantic import BaseModel, ConfigDict, Field

from checkpoints.trace import TraceWriter
from nodes.prompt import RULES
from nodes.tokens import Counter, approximate
from tools.approvals import Approvals
from tools.executor import ToolExecutor
from tools.policy import Policy
from tools.registry import ToolRegistry


class Limits(BaseModel):
    """Budgets that end a run with a stop reason instead of letting it run away."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_model_calls: int = Field(default=8, ge=1, description="plan steps per run")
    max_tool_errors: int = Field(default=3, ge=1, description="failed tool observations per run")
    deadline_s: float = Field(default=300.0, gt=0, description="seconds of active time per turn")
    token_budget: int = Field(default=200_000, ge=1, description="model tokens per run")
    input_budget_tokens: int = Field(default=16_000, ge=256, description="context size limit")
    compact_trigger: float = Field(default=0.80, gt=0, le=1, description="share that triggers compaction")
    compact_target: float = Field(default=0.55, gt=0, le=1, description="share compaction aims for")


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
