"""A tool: a pydantic argument model, a function, and the limits graphwright enforces."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import redis
from langchain_core.tools import StructuredTool
from pydantic import BaseModel

from graphwright.checkpoints.keys import Keys

Risk = Literal["read", "write"]
Trust = Literal["trusted", "untrusted"]


@dataclass(frozen=True, kw_only=True)
class ToolContext:
    """What a running tool may use. `idempotency_key` is set for writes only."""

    thread_id: str
    tool_call_id: str
    idempotency_key: str | None
    redis: redis.Redis
    keys: Keys


ToolFunc = Callable[[Any, ToolContext], Any]


@dataclass(frozen=True, kw_only=True)
class ToolSpec:
    """One tool and its guard rails."""

    name: str
    description: str
    args_model: type[BaseModel]
    func: ToolFunc = field(repr=False)
    risk: Risk = "read"
    trust: Trust = "trusted"
    timeout_s: float = 30.0
    max_result_chars: int = 4_000
    retry_reads: int = 0
    # A write that dedupes on `ctx.idempotency_key` itself (the built-in ones do): after
    # a crash mid-call it is run again under the same key instead of asking a reviewer.
    keyed: bool = False
    server: str | None = None  # the MCP server the tool comes from; None for Python tools
    json_schema: dict[str, Any] | None = None  # shown to the model instead of args_model's

    @property
    def source(self) -> str:
        """Where the tool comes from: `python` or `mcp:<server>`."""
        return f"mcp:{self.server}" if self.server else "python"

    @property
    def model_name(self) -> str:
        """The name the model calls it by: model APIs allow only `[A-Za-z0-9_-]`."""
        return self.name.replace(".", "__")

    def __post_init__(self) -> None:
        if self.risk == "write" and self.retry_reads:
            raise ValueError(f"tool {self.name!r}: a write is never retried blindly")

    def as_langchain_tool(self) -> StructuredTool:
        """The LangChain view of the tool, for `bind_tools`; graphwright runs it itself."""

        def refuse(**_: Any) -> Any:
            raise RuntimeError("graphwright tools run through tools.executor, not directly")

        return StructuredTool.from_function(
            func=refuse,
            name=self.model_name,
            description=self.description,
            args_schema=self.json_schema or self.args_model,
            metadata={"risk": self.risk, "trust": self.trust, "source": self.source},
        )
