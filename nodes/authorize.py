"""May this call run now? `act` asks here just before each call runs.

The answer comes from the policy, the run's taint and the gate's decision recorded in
Redis (`graphwright.tools.approvals`), never from the action the graph state claims: the state can
be rewritten by any API caller, so it can only make a call stricter (`refuse`).
"""

from __future__ import annotations

import json
from typing import Any

from graphwright.nodes.deps import AgentDeps
from graphwright.nodes.gate_models import digest
from graphwright.nodes.state import AgentState, ProposedCall
from graphwright.tools.approvals import GateDecision
from graphwright.tools.executor import Observation, ToolError, argument_problem


def authorize(
    call: ProposedCall, *, tainted: bool, deps: AgentDeps, thread_id: str
) -> ProposedCall | Observation:
    """The call as it may run, the observation the model gets instead, or a call for the gate.

    A retry or settlement runs only as a reviewer recorded it; a call that must go back to the gate
    comes with `needs_approval`.
    """
    recorded = deps.approvals.get(thread_id, call["id"])
    if recorded is not None and recorded.digest != digest(call["name"], call["args"]):
        recorded = None  # decided for other arguments
    runnable = as_recorded(call, recorded)
    spec = deps.registry.get(call["name"])
    args = parsed(call["args"])
    if spec is None or args is None or argument_problem(spec, args):
        return runnable  # the executor refuses it at validation: nothing runs
    verdict = deps.policy.decide(deps.registry, spec.name, args, tainted=tainted)
    if call["action"] == "refuse":
        return not_allowed(call, f"refused by policy: {call['reason']}")
    if verdict.action == "refuse":
        return not_allowed(call, f"refused by policy: {verdict.reason}")
    if verdict.action == "needs_approval" and recorded is None:
        return unapproved(call, verdict.reason)
    return runnable


def unapproved(call: ProposedCall, reason: str) -> ProposedCall:
    """A call that reached `act` without its approval (a forged state, a replay).

    It goes back to the gate, where a reviewer sees what was attempted.
    """
    return {
        "id": call["id"],
        "name": call["name"],
        "args": call["args"],
        "action": "needs_approval",
        "reason": f"{reason}; it came to run with no reviewer's decision recorded",
    }


def is_tainted(state: AgentState, deps: AgentDeps, thread_id: str) -> bool:
    """Whether the run read untrusted content.

    As the state says, or as Redis remembers (`observe` records it there, so clearing the state's
    flag changes nothing).
    """
    return bool(state.get("tainted")) or deps.approvals.tainted(thread_id)


def as_recorded(call: ProposedCall, recorded: GateDecision | None) -> ProposedCall:
    """Drop a `retry`/`settled` the reviewer did not record; the record's result wins."""
    out: ProposedCall = {
        "id": call["id"],
        "name": call["name"],
        "args": call["args"],
        "action": call["action"],
        "reason": call["reason"],
    }
    if recorded is not None and recorded.action == "retry":
        out["retry"] = True
    if recorded is not None and recorded.action == "mark_done" and recorded.result:
        out["settled"] = recorded.result
    return out


def parsed(args: dict[str, Any] | str) -> dict[str, Any] | None:
    """The arguments as the executor will read them; None when it will refuse them."""
    if isinstance(args, dict):
        return args
    try:
        value = json.loads(args) if args.strip() else {}
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def not_allowed(call: ProposedCall, message: str) -> Observation:
    """The observation for a call policy refuses, told to the model as its result."""
    return Observation(
        ok=False,
        tool=call["name"],
        call_id=call["id"],
        error=ToolError(type="tool_error", message=message, retryable=False),
    )
