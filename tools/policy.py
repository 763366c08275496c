"""Which proposed calls run, need a human's approval, or are refused. Code, not prompt."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from graphwright.tools.registry import ToolRegistry

Action = Literal["run", "needs_approval", "refuse"]
Approval = Literal["always", "never"]


@dataclass(frozen=True, kw_only=True)
class Decision:
    """What policy decided for a call, and why."""

    action: Action
    reason: str


# A per-tool rule: given the call's name and arguments, decide.
Rule = Callable[[str, Mapping[str, Any]], Decision]


@dataclass(frozen=True, kw_only=True)
class Policy:
    """Default: every `write` needs approval. Taint overrides any per-tool setting."""

    per_tool: Mapping[str, Approval | Rule] = field(default_factory=dict)

    def decide(
        self,
        registry: ToolRegistry,
        name: str,
        args: Mapping[str, Any],
        *,
        tainted: bool,
    ) -> Decision:
        spec = registry.get(name)
        if spec is None:
            return Decision(action="refuse", reason=f"{name!r} is not an allowed tool")
        decision = self._per_tool(name, args, is_write=spec.risk == "write")
        if decision.action == "refuse":
            return decision
        if tainted and spec.risk == "write":
            # Whatever the setting, the prompt or a tool's output says.
            return Decision(
                action="needs_approval",
                reason="the run has read untrusted content; every write needs approval",
            )
        return decision

    def _per_tool(self, name: str, args: Mapping[str, Any], *, is_write: bool) -> Decision:
        rule = self.per_tool.get(name)
        if rule == "always":
            return Decision(action="needs_approval", reason=f"policy: {name} always needs approval")
        if rule == "never":
            return Decision(action="run", reason=f"policy: {name} never needs approval")
        if callable(rule):
            return rule(name, args)
        if is_write:
            return Decision(action="needs_approval", reason="writes need approval by default")
        return Decision(action="run", reason="reads run without approval")
