"""What `graphwright tools` shows: every tool with its source, risk, trust and approval rule."""

from __future__ import annotations

from pydantic import BaseModel

from graphwright.tools.policy import Policy
from graphwright.tools.registry import ToolRegistry


class ToolInfo(BaseModel):
    """One tool as an operator reviews it."""

    name: str
    source: str  # "python" or "mcp:<server>"
    risk: str
    trust: str
    needs_approval: bool  # in a run that has read nothing untrusted
    idempotent: bool  # after an unknown outcome it runs again under its key, without asking
    timeout_s: float
    max_result_chars: int
    description: str  # its first line


def catalog(registry: ToolRegistry, policy: Policy | None = None) -> list[ToolInfo]:
    """The tools by name; approval as the policy decides it before any untrusted read."""
    policy = policy or Policy()
    out = []
    for name in registry.names():
        spec = registry.get(name)
        assert spec is not None  # listed by the registry itself
        decision = policy.decide(registry, name, {}, tainted=False)
        out.append(
            ToolInfo(
                name=name,
                source=spec.source,
                risk=spec.risk,
                trust=spec.trust,
                needs_approval=decision.action == "needs_approval",
                idempotent=spec.keyed,
                timeout_s=spec.timeout_s,
                max_result_chars=spec.max_result_chars,
                description=(spec.description.splitlines() or [""])[0],
            )
        )
    return out
