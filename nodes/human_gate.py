"""human_gate: stop for a reviewer with the exact pending calls; apply approve, edit or reject.

Nothing here has a side effect before `interrupt()`: LangGraph re-runs this node
from its start when the run resumes.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage
from langchain_core.runnables import RunnableConfig
from langgraph.types import interrupt

from graphwright.nodes.act import to_message
from graphwright.nodes.authorize import authorize, is_tainted
from graphwright.nodes.deps import AgentDeps
from graphwright.nodes.gate_models import (
    AnyDecision,
    Edit,
    GateDecisionError,
    MarkDone,
    Reject,
    Retry,
    digest,
    gate_request,
    parse_decisions,
)
from graphwright.nodes.state import AgentState, CallRecord, ProposedCall, call_record
from graphwright.nodes.tracing import fence_of, run_of, thread_of
from graphwright.tools.approvals import GateDecision
from graphwright.tools.executor import Observation, ToolError


def rejection(call: ProposedCall, reason: str) -> Observation:
    """The observation for a rejected call: the reviewer's reason, as its result."""
    return Observation(
        ok=False,
        tool=call["name"],
        call_id=call["id"],
        error=ToolError(
            type="rejected", message=f"rejected by the reviewer: {reason}", retryable=False
        ),
    )


def with_edited_args(
    messages: list[AnyMessage], edits: dict[str, dict[str, Any]]
) -> AIMessage | None:
    """The newest AI message with edited arguments, same id, so add_messages replaces it."""
    for message in reversed(messages):
        if isinstance(message, AIMessage) and message.tool_calls:
            calls = [{**c, "args": edits.get(c["id"] or "", c["args"])} for c in message.tool_calls]
            return message.model_copy(update={"tool_calls": calls})
    return None


def human_gate(state: AgentState, config: RunnableConfig, *, deps: AgentDeps) -> dict[str, Any]:
    """Interrupt until a valid decision arrives; a refused decision re-asks and changes nothing."""
    request = gate_request(pending(state, deps, thread_of(config)), deps.registry)
    answer = interrupt(request.model_dump())
    while True:
        try:
            decisions = parse_decisions(request, answer, deps.registry)
            break
        except GateDecisionError as exc:
            # A second interrupt in the same node is a fresh question; the state is untouched.
            answer = interrupt(request.model_copy(update={"error": str(exc)}).model_dump())
    thread_id = thread_of(config)
    deps.trace.emit(
        thread_id,
        "gate_decision",
        fence=fence_of(config),
        run_id=run_of(config),
        step=state.get("model_calls") or 0,
        node="human_gate",
        decisions={k: v.model_dump() for k, v in decisions.items()},
    )
    update = apply(state, decisions)
    granted, revoked = recorded(update["proposed"], decisions)
    deps.approvals.record(thread_id, granted, revoked, fence=fence_of(config))
    return update


def pending(state: AgentState, deps: AgentDeps, thread_id: str) -> list[ProposedCall]:
    """The proposed calls, any the state claims may run unasked gated like the others.

    A call the state claims may run without a recorded decision (a caller's update or goto) is asked
    about like any other gated call.
    """
    tainted = is_tainted(state, deps, thread_id)
    out: list[ProposedCall] = []
    for call in state.get("proposed") or []:
        if call["action"] in ("outcome_unknown", "needs_approval"):
            out.append(call)
            continue
        verdict = authorize(call, tainted=tainted, deps=deps, thread_id=thread_id)
        gated = isinstance(verdict, dict) and verdict["action"] == "needs_approval"
        out.append(verdict if gated and isinstance(verdict, dict) else call)
    return out


def recorded(
    runnable: list[ProposedCall], decisions: dict[str, AnyDecision]
) -> tuple[dict[str, GateDecision], list[str]]:
    """What act may trust.

    Each decided call as it will run (edited arguments, a settled result), by digest; every other
    decided call (rejected, or the run ended) is revoked.
    """
    granted: dict[str, GateDecision] = {}
    for call in runnable:
        decision = decisions.get(call["id"])
        if decision is not None and not isinstance(decision, Reject):
            granted[call["id"]] = GateDecision(
                action=decision.action,
                digest=digest(call["name"], call["args"]),
                result=call.get("settled"),
            )
    return granted, [call_id for call_id in decisions if call_id not in granted]


def settle_unknown(call: ProposedCall, decision: Retry | MarkDone) -> ProposedCall:
    """A write whose outcome was unknown, as the reviewer settled it: act retries or records it."""
    settled: ProposedCall = {
        "id": call["id"],
        "name": call["name"],
        "args": call["args"],
        "action": "run",
        "reason": f"the reviewer chose {decision.action}",
    }
    if isinstance(decision, Retry):
        settled["retry"] = True
    else:
        settled["settled"] = decision.result
    return settled


def apply(state: AgentState, decisions: dict[str, AnyDecision]) -> dict[str, Any]:
    """Approved and edited calls become runnable; rejected ones become observations."""
    runnable: list[ProposedCall] = []
    rejected: list[Observation] = []
    log: list[CallRecord] = []
    edits: dict[str, dict[str, Any]] = {}
    end_reason: str | None = None
    for call in state.get("proposed") or []:
        decision = decisions.get(call["id"])
        if decision is None:
            runnable.append(call)
        elif isinstance(decision, Retry | MarkDone):
            runnable.append(settle_unknown(call, decision))
        elif isinstance(decision, Reject):
            rejected.append(rejection(call, decision.reason))
            log.append(call_record(state, call, "rejected"))
            if decision.end_run:
                end_reason = f"{call['name']} rejected: {decision.reason}"
        else:
            args = decision.args if isinstance(decision, Edit) else call["args"]
            if isinstance(decision, Edit):
                edits[call["id"]] = decision.args
            runnable.append(
                {
                    **call,
                    "args": args,
                    "action": "run",
                    "reason": f"approved by the reviewer ({decision.action})",
                }
            )
    messages: list[AnyMessage] = []
    if edits:
        edited = with_edited_args(list(state.get("messages") or []), edits)
        if edited is not None:
            messages.append(edited)
    if end_reason:
        # Every call of the message gets its one answer, so the history stays valid.
        rejected += [not_run(call, end_reason) for call in runnable]
        runnable = []  # observe ends the run with stop reason "rejected"
    messages.extend(to_message(o) for o in rejected)
    # The deadline counts active time only (nodes.clock), so waiting here costs nothing.
    return {
        "proposed": runnable,
        "messages": messages,
        "call_log": log,
        "end_requested": end_reason,
    }


def not_run(call: ProposedCall, why: str) -> Observation:
    """The answer to a call that never ran because the reviewer ended the run."""
    return Observation(
        ok=False,
        tool=call["name"],
        call_id=call["id"],
        error=ToolError(
            type="rejected", message=f"not run: the reviewer ended the run ({why})", retryable=False
        ),
    )


def describe(request: dict[str, Any]) -> str:
    """One line per pending call, for logs and the CLI."""
    return "\n".join(
        f"{c['id']}: {c['tool']} {json.dumps(c['args'], ensure_ascii=False)} ({c['reason']})"
        for c in request.get("calls", [])
    )
