"""plan: the only node where the model decides. It answers, or proposes tool calls for policy."""

from __future__ import annotations

import time
import uuid
from typing import Any, cast

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig

from graphwright.nodes.authorize import is_tainted
from graphwright.nodes.canonical import canonical
from graphwright.nodes.deps import AgentDeps
from graphwright.nodes.finish import finish
from graphwright.nodes.jsonreply import text_of
from graphwright.nodes.model_call import invoke_model
from graphwright.nodes.prompt import plan_messages
from graphwright.nodes.state import Action, AgentState, ProposedCall, turn_calls
from graphwright.nodes.stops import budget_stop
from graphwright.nodes.tracing import estimate_usage, thread_of, total_tokens, trace_model_call
from graphwright.tools.executor import argument_problem


def propose(
    state: AgentState, deps: AgentDeps, reply: AIMessage, thread_id: str
) -> list[ProposedCall]:
    """The policy's verdict on every call; broken calls go to act so the model hears why.

    A call whose arguments fail its tool's schema never reaches the policy, so never a
    reviewer: act's executor refuses it and the model reads why (a tool error, counted).
    """
    tainted = is_tainted(state, deps, thread_id)
    proposed: list[ProposedCall] = []
    for call in reply.tool_calls:
        spec = deps.registry.get(call["name"])
        name = spec.name if spec else call["name"]  # the model's "git__status" is git.status
        problem = argument_problem(spec, call["args"]) if spec else None
        if problem:
            action: Action = "run"  # the executor rejects it at validation; nothing runs
            reason = f"invalid arguments: {problem}"
        else:
            decision = deps.policy.decide(deps.registry, name, call["args"], tainted=tainted)
            action, reason = decision.action, decision.reason
        proposed.append(
            ProposedCall(
                id=call["id"] or f"call_{uuid.uuid4().hex[:12]}",
                name=name,
                args=call["args"],
                action=action,
                reason=reason,
            )
        )
    for bad in reply.invalid_tool_calls:
        proposed.append(
            ProposedCall(
                id=bad.get("id") or f"call_{uuid.uuid4().hex[:12]}",
                name=bad.get("name") or "",
                args=bad.get("args") or "",
                action="run",  # the executor rejects it at validation; nothing runs
                reason=f"malformed tool call: {bad.get('error') or 'arguments are not valid JSON'}",
            )
        )
    return proposed


def retried_rejection(state: AgentState, proposed: list[ProposedCall]) -> ProposedCall | None:
    """A call a reviewer already rejected, proposed again: the run stops instead of asking twice."""
    rejected = {
        (r["name"], r["canonical_args"]) for r in turn_calls(state) if r["outcome"] == "rejected"
    }
    for call in proposed:
        if (call["name"], canonical(call["args"])) in rejected:
            return call
    return None


def plan(state: AgentState, config: RunnableConfig, *, deps: AgentDeps) -> dict[str, Any]:
    """Call the model once with the tools bound; stop first if a budget is spent."""
    reason = budget_stop(state, deps.limits)
    if reason:
        return finish(state, deps, config, reason)
    step = (state.get("model_calls") or 0) + 1
    messages = plan_messages(state, deps.role, deps.rules)
    started = time.time()
    # The turn's deadline counts active time: what is left of it is this call's to use.
    deadline = deps.clock() + deps.limits.deadline_s - (state.get("active_s") or 0.0)
    reply = invoke_model(
        deps.model,
        deps.planner,
        messages,
        config,
        how=deps.model_call,
        clock=deps.clock,
        deadline=deadline,
    )
    estimate_usage(reply, messages, deps.count)
    used = total_tokens(reply)
    trace_model_call(deps.trace, config, node="plan", step=step, reply=reply, started=started)
    update: dict[str, Any] = {"model_calls": step, "tokens": (state.get("tokens") or 0) + used}
    proposed = propose(state, deps, reply, thread_of(config))
    if not proposed:
        merged = cast(AgentState, {**state, **update})
        done = finish(merged, deps, config, "answered", answer=text_of(reply))
        return {**update, **done, "messages": [reply]}
    again = retried_rejection(state, proposed)
    if again:
        detail = f"the model proposed the rejected call {again['name']} again"
        merged = cast(AgentState, {**state, **update})
        return {**update, **finish(merged, deps, config, "rejected", detail=detail)}
    return {**update, "messages": [reply], "proposed": proposed, "plan_notes": text_of(reply)}
