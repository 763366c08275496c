"""LangChain's ``HumanInTheLoopMiddleware`` held to graphwright's rule: a gated call runs only
with a reviewer's decision recorded outside the graph state.

The batched middleware decides in its ``after_model`` node and leaves the verdict in the
state (the AI message's tool calls, its edits), which ``update_state``, ``Command(goto=...)``
and ``Command(update=...)`` can write too. So in a served graph that uses it, the node's
verdict is recorded in ``Approvals`` (fenced) when the node itself returns, and the tools
node runs a gated call only when a recorded verdict for that call id and the digest of the
arguments it is about to run with is there; otherwise the model gets an error result.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph._internal._runnable import RunnableCallable
from langgraph.prebuilt.tool_node import ToolCallRequest, ToolNode
from langgraph.pregel import Pregel
from langgraph.types import Command

from graphwright.nodes.gate_models import digest
from graphwright.nodes.tracing import fence_of, thread_of
from graphwright.tools.approvals import Approvals, GateDecision

AnyPregel = Pregel[Any, Any, Any, Any]
Result = ToolMessage | Command[Any]
Handler = Callable[[ToolCallRequest], Result]
AHandler = Callable[[ToolCallRequest], Awaitable[Result]]


def batched_hitl(graph: AnyPregel) -> dict[str, set[str]]:
    """The batched ``HumanInTheLoopMiddleware`` nodes of ``graph`` and the tools each gates."""
    from langchain.agents.middleware import HumanInTheLoopMiddleware

    found: dict[str, set[str]] = {}
    for name, node in graph.nodes.items():
        owner = getattr(getattr(node.bound, "func", None), "__self__", None)
        if isinstance(owner, HumanInTheLoopMiddleware) and name.endswith(".after_model") \
                and getattr(owner, "interrupt_mode", "batched") == "batched":
            found[name] = set(owner.interrupt_on)
    return found


def guarded(graph: AnyPregel, approvals: Approvals) -> AnyPregel:
    """``graph`` with its HITL verdicts recorded and checked at tool time; as is without any."""
    gates = batched_hitl(graph)
    tools = graph.nodes.get("tools")
    if not gates or tools is None or not isinstance(tools.bound, ToolNode):
        return graph
    gated = set().union(*gates.values())
    nodes = dict(graph.nodes)
    for name in gates:
        nodes[name] = nodes[name].copy({"bound": _recording(nodes[name].bound, approvals)})
    nodes["tools"] = tools.copy({"bound": _checking(tools.bound, gated, approvals)})
    return graph.copy(update={"nodes": nodes})


def _recording(node: Any, approvals: Approvals) -> RunnableCallable:
    """The middleware node, its verdict recorded once it returns (never on an interrupt)."""

    def record(state: Any, config: RunnableConfig) -> Any:
        out = node.invoke(state, config)
        _record(approvals, config, _verdict(state, out))
        return out

    async def arecord(state: Any, config: RunnableConfig) -> Any:
        out = await node.ainvoke(state, config)
        _record(approvals, config, _verdict(state, out))
        return out

    return RunnableCallable(record, arecord, name=getattr(node, "name", None), trace=False)


EDITS = "hitl_edited_tool_calls"  # the middleware's state key for a reviewer's edits


def _verdict(state: Any, out: Any) -> list[tuple[str, str, dict[str, Any]]]:
    """The calls the middleware let through, with the arguments they are to run with: not
    those it answered itself (a reject or a respond keeps the call beside its answer)."""
    given = out if isinstance(out, dict) else {}
    messages = list(given.get("messages") or [])
    ai = next((m for m in messages if isinstance(m, AIMessage)), None)
    if ai is None:  # nothing needed review: the proposed calls stand as they are
        ai = next((m for m in reversed(_messages(state)) if isinstance(m, AIMessage)), None)
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    edits = given.get(EDITS) or {}
    calls = []
    for c in (ai.tool_calls if ai is not None else []):
        if not c.get("id") or c["id"] in answered:
            continue
        edited = edits.get(c["id"])
        name, args = (edited["name"], edited["args"]) if edited else (c["name"], c["args"])
        calls.append((str(c["id"]), name, args))
    return calls


def _messages(state: Any) -> list[Any]:
    got = state.get("messages") if isinstance(state, dict) else getattr(state, "messages", None)
    return list(got or [])


def _record(approvals: Approvals, config: RunnableConfig,
            calls: Iterable[tuple[str, str, dict[str, Any]]]) -> None:
    granted = {call_id: GateDecision(action="approve", digest=digest(name, args))
               for call_id, name, args in calls}
    approvals.record(thread_of(config), granted, fence=fence_of(config))


def _checking(node: ToolNode, gated: set[str], approvals: Approvals) -> ToolNode:
    """A copy of the tools node whose innermost step refuses a gated call without a verdict,
    so it checks the call as it is about to run (after the middleware applied any edit)."""
    outer, aouter = node._wrap_tool_call, node._awrap_tool_call

    def refusal(request: ToolCallRequest) -> ToolMessage | None:
        call = request.tool_call
        if call["name"] not in gated:
            return None
        config = request.runtime.config if request.runtime is not None else {}
        decision = approvals.get(thread_of(config), str(call.get("id") or ""))
        if decision is not None and decision.digest == digest(call["name"], call["args"]):
            return None
        return ToolMessage(
            content=f"not run: {call['name']} needs a reviewer's decision and none is recorded "
                    "for this call with these arguments", name=call["name"],
            tool_call_id=str(call.get("id") or ""), status="error")

    def wrap(request: ToolCallRequest, execute: Handler) -> Result:
        def inner(req: ToolCallRequest) -> Result:
            return refusal(req) or execute(req)

        return outer(request, inner) if outer is not None else inner(request)

    async def awrap(request: ToolCallRequest, execute: AHandler) -> Result:
        async def inner(req: ToolCallRequest) -> Result:
            return refusal(req) or await execute(req)

        return await aouter(request, inner) if aouter is not None else await inner(request)

    checked = copy.copy(node)
    checked.func, checked.afunc = checked._func, checked._afunc  # bound to the copy, not the original
    checked._wrap_tool_call = wrap
    checked._awrap_tool_call = awrap if aouter is not None or outer is None else None
    return checked
