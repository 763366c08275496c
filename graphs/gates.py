"""The pending gate of a thread, gathered across workers, and resume commands checked first."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command
from pydantic import BaseModel

from graphwright.graphs.context import Graph
from graphwright.graphs.hitl import hitl_calls, hitl_resume, is_hitl_request
from graphwright.nodes.gate_models import (
    GateDecisionError,
    GateRequest,
    PendingCall,
    from_langchain,
    parse_decisions,
)
from graphwright.tools.registry import ToolRegistry


def pending_gate(graph: Graph, config: RunnableConfig) -> GateRequest | None:
    """Every call waiting for approval on the thread, each naming its worker and interrupt."""
    return gate_of(graph.get_state(config))


def gate_of(snapshot: Any) -> GateRequest | None:
    """`pending_gate` of a `StateSnapshot` already read."""
    calls: list[PendingCall] = []
    errors: list[str] = []
    for task in snapshot.tasks:
        for item in task.interrupts:
            if is_hitl_request(item.value):  # LangChain's HumanInTheLoopMiddleware
                values = snapshot.values if isinstance(snapshot.values, dict) else {}
                calls += hitl_calls(item.value, item.id, list(values.get("messages") or []))
                continue
            if not (isinstance(item.value, dict) and item.value.get("kind") == "approval"):
                continue
            request = GateRequest.model_validate(item.value)
            worker = None if task.name == "human_gate" else task.name
            calls += [
                c.model_copy(update={"worker": worker, "interrupt_id": item.id})
                for c in request.calls
            ]
            if request.error:
                errors.append(request.error)
    if not calls:
        return None
    return GateRequest(calls=calls, error="; ".join(errors) or None)


def gate_command(
    graph: Graph,
    config: RunnableConfig,
    decision: Any,
    registry: ToolRegistry,
    *,
    request: GateRequest | None = None,
) -> Command[Any]:
    """A resume command for the pending gate(s), checked first so a bad decision changes nothing.

    With several workers waiting, a map of call id to decision answers any of them; each
    interrupt it touches must have all of its calls answered.

    Raises:
        GateDecisionError: no gate is pending, or the decision does not fit it.
    """
    request = request or pending_gate(graph, config)  # the caller's, read under its lock
    if request is None:
        thread = (config.get("configurable") or {}).get("thread_id")
        raise GateDecisionError(f"thread {thread!r} is not waiting at a gate")
    answer = _plain(decision)
    groups: dict[str, list[PendingCall]] = {}
    for call in request.calls:
        groups.setdefault(call.interrupt_id or "", []).append(call)
    if len(groups) == 1:
        ((interrupt_id, calls),) = groups.items()
        return Command(resume={interrupt_id: _answer(calls, answer, registry)})
    if isinstance(answer, dict) and isinstance(answer.get("decisions"), list):
        answer = from_langchain(request.calls, answer["decisions"])  # by position, across workers
    if not (isinstance(answer, dict) and "action" not in answer):
        raise GateDecisionError(
            f"{len(request.calls)} calls wait in {len(groups)} workers; answer with a map of "
            f"call id to decision ({', '.join(c.id for c in request.calls)})"
        )
    known = {c.id for c in request.calls}
    unknown = sorted(set(answer) - known)
    if unknown:
        raise GateDecisionError(
            f"no pending call has id {', '.join(unknown)}; pending: {', '.join(sorted(known))}"
        )
    resume: dict[str, Any] = {}
    for interrupt_id, calls in groups.items():
        part = {c.id: answer[c.id] for c in calls if c.id in answer}
        if part:
            resume[interrupt_id] = _answer(calls, part, registry)
    return Command(resume=resume)


def _answer(calls: list[PendingCall], answer: Any, registry: ToolRegistry) -> Any:
    """The resume value of one interrupt: graphwright's decision map, or LangChain's shape."""
    if calls[0].origin == "langchain":
        return hitl_resume(calls, answer)
    decisions = parse_decisions(GateRequest(calls=calls), answer, registry)
    return {k: d.model_dump() for k, d in decisions.items()}


def _plain(decision: Any) -> Any:
    """Pydantic decisions (or a map of them) as plain data, the form stored in a checkpoint."""
    if isinstance(decision, BaseModel):
        return decision.model_dump()
    if isinstance(decision, dict):
        return {k: v.model_dump() if isinstance(v, BaseModel) else v for k, v in decision.items()}
    return decision
