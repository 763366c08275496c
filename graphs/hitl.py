"""LangChain's `HumanInTheLoopMiddleware` interrupts read as graphwright gates, and answered.

An `HITLRequest` (`action_requests` + `review_configs`) becomes pending calls with
digests like graphwright's own; the answer, given either as graphwright decisions or as
LangChain's `decisions` list, is checked against them and sent back in LangChain's shape.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage
from pydantic import TypeAdapter, ValidationError

from graphwright.nodes.gate_models import (
    Decision,
    Edit,
    GateDecisionError,
    PendingCall,
    Reject,
    digest,
    from_langchain,
)

_decisions = TypeAdapter(dict[str, Decision])
_one = TypeAdapter(Decision)


def is_hitl_request(value: Any) -> bool:
    """Whether an interrupt's value is LangChain's HITLRequest shape, answered by its decisions."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("action_requests"), list)
        and isinstance(value.get("review_configs"), list)
        and value.get("kind") != "approval"
    )


def hitl_calls(value: dict[str, Any], interrupt_id: str, messages: list[Any]) -> list[PendingCall]:
    """The request's actions as pending calls; ids are the model's tool call ids when found."""
    allowed = {
        c.get("action_name"): list(c.get("allowed_decisions") or [])
        for c in value["review_configs"]
    }
    proposed = _newest_tool_calls(messages)
    calls: list[PendingCall] = []
    for i, action in enumerate(value["action_requests"]):
        name, args = str(action.get("name")), action.get("args") or {}
        match = next((c for c in proposed if c["name"] == name and c["args"] == args), None)
        if match is not None:
            proposed.remove(match)
        calls.append(
            PendingCall(
                id=str(match["id"]) if match and match.get("id") else f"{interrupt_id}:{i}",
                tool=name,
                args=args,
                risk="review",
                reason=str(action.get("description") or ""),
                description=action.get("description"),
                digest=digest(name, args),
                interrupt_id=interrupt_id,
                origin="langchain",
                allowed_decisions=allowed.get(name, ["approve", "edit", "reject"]),
            )
        )
    return calls


def _newest_tool_calls(messages: list[Any]) -> list[dict[str, Any]]:
    for message in reversed(messages):
        if isinstance(message, AIMessage) and message.tool_calls:
            return [dict(c) for c in message.tool_calls]
    return []


def hitl_resume(calls: list[PendingCall], answer: Any) -> dict[str, Any]:
    """`{"decisions": [...]}` for the middleware, one per call in order, checked first.

    Raises:
        GateDecisionError: the answer does not fit the pending calls.
    """
    if isinstance(answer, dict) and isinstance(answer.get("decisions"), list):
        from_langchain(calls, answer["decisions"])  # checks count, kinds, tools and digests
        _check_digests(
            calls,
            {
                c.id: d
                for c, d in zip(calls, answer["decisions"], strict=True)
                if isinstance(d, dict) and d.get("digest")
            },
        )
        return {
            "decisions": [
                {k: v for k, v in d.items() if k != "digest"} for d in answer["decisions"]
            ]
        }
    try:
        if isinstance(answer, dict) and "action" not in answer:
            decisions = _decisions.validate_python(answer)
        elif len(calls) == 1:
            decisions = {calls[0].id: _one.validate_python(answer)}
        else:
            raise GateDecisionError(
                f"{len(calls)} calls are pending; answer with a map of call id "
                "to decision, or a LangChain decisions list"
            )
    except ValidationError as exc:
        raise GateDecisionError(f"the decision is malformed: {exc.errors()[0]['msg']}") from exc
    missing = sorted({c.id for c in calls} - set(decisions))
    unknown = sorted(set(decisions) - {c.id for c in calls})
    if unknown or missing:
        raise GateDecisionError(
            f"answer every pending call ({', '.join(c.id for c in calls)}); "
            f"unknown: {', '.join(unknown) or '-'}, missing: "
            f"{', '.join(missing) or '-'}"
        )
    _check_digests(calls, {k: {"digest": d.digest} for k, d in decisions.items() if d.digest})
    out = []
    for call in calls:
        decision = decisions[call.id]
        if decision.action not in call.allowed_decisions:
            raise GateDecisionError(
                f"{decision.action} is not allowed for {call.tool}; allowed: "
                f"{', '.join(call.allowed_decisions)}"
            )
        if isinstance(decision, Edit):
            out.append(
                {"type": "edit", "edited_action": {"name": call.tool, "args": decision.args}}
            )
        elif isinstance(decision, Reject):
            out.append({"type": "reject", "message": decision.reason})
        else:
            out.append({"type": "approve"})
    return {"decisions": out}


def _check_digests(calls: list[PendingCall], given: dict[str, dict[str, Any]]) -> None:
    for call in calls:
        bound = (given.get(call.id) or {}).get("digest")
        if bound is not None and bound != call.digest:
            raise GateDecisionError(
                f"the decision for {call.id} was made for other arguments "
                f"(digest {bound}, pending {call.digest}); review it again"
            )
