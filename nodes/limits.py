"""A run's budgets (pydantic, user-facing), apart from the services that need LangChain.

The settings read them, and a CLI command that runs no graph must not pay for LangChain.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Limits(BaseModel):
    """Budgets that end a run with a stop reason instead of letting it run away."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_model_calls: int = Field(default=8, ge=1, description="plan steps per run")
    max_tool_errors: int = Field(default=3, ge=1, description="failed tool observations per run")
    deadline_s: float = Field(default=300.0, gt=0, description="seconds of active time per turn")
    token_budget: int = Field(default=200_000, ge=1, description="model tokens per run")
    input_budget_tokens: int = Field(default=16_000, ge=256, description="context size limit")
    compact_trigger: float = Field(
        default=0.80, gt=0, le=1, description="share that triggers compaction"
    )
    compact_target: float = Field(default=0.55, gt=0, le=1, description="share compaction aims for")
    model_retries: int = Field(
        default=2, ge=0, le=10, description="retries of a model call that failed for a moment"
    )
