"""LangChain's `HumanInTheLoopMiddleware` held to graphwright's rule.

A gated call runs only with a reviewer's decision recorded outside the graph state, and runs once on
it.

The batched middleware decides in its `after_model` node and leaves the verdict in the
state, which `update_state` and `Command` can write too. So in a served graph that uses
it, the node's verdict is recorded in `Approvals` (fenced) when the node returns, and the
`tools` node is wrapped in a node of ours (public `Runnable` API only): a gated call runs
when a recorded approval for its id and arguments is there, and that approval is spent by
the claim of the call's idempotency record in one Redis script. A gated call without one
(a forged call, a replay, a fork) goes back to a reviewer: the wrapper interrupts with a
LangChain HITL request, shown on the review page and in the API like the middleware's own.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.prebuilt.tool_node import ToolNode
from langgraph.pregel import Pregel
from langgraph.types import interrupt

from graphwright.nodes.gate_models import digest
from graphwright.nodes.tracing import fence_of, thread_of
from graphwright.tools.approvals import Approvals, GateDecision
from graphwright.tools.records import Records, args_digest

AnyPregel = Pregel[Any, Any, Any, Any]
Call = dict[str, Any]  # a LangChain ToolCall: name, args, id, type
EDITS = "hitl_edited_tool_calls"  # the middleware's state key for a reviewer's edits


def batched_hitl(graph: AnyPregel) -> dict[str, set[str]]:
    """The batched `HumanInTheLoopMiddleware` nodes of `graph` and the tools each gates.

    `langchain` is not a dependency of graphwright: a graph built with its middleware has
    imported it already, so when it is not loaded no graph can hold one and there is
    nothing to guard (a plain LangGraph project runs without `langchain` installed).
    """
    middleware = sys.modules.get("langchain.agents.middleware")
    if middleware is None:
        return {}
    kind = middleware.HumanInTheLoopMiddleware
    found: dict[str, set[str]] = {}
    for name, node in graph.nodes.items():
        owner = getattr(getattr(node.bound, "func", None), "__self__", None)
        if (
            isinstance(owner, kind)
            and name.endswith(".after_model")
            and getattr(owner, "interrupt_mode", "batched") == "batched"
        ):
            found[name] = set(owner.interrupt_on)
    return found


def guarded(graph: AnyPregel, approvals: Approvals) -> AnyPregel:
    """`graph` with its HITL verdicts recorded and checked at tool time; as is without any."""
    gates = batched_hitl(graph)
    tools = graph.nodes.get("tools")
    if not gates or tools is None or not isinstance(tools.bound, ToolNode):
        return graph
    gated = set().union(*gates.values())
    records = Records(approvals.redis, approvals.keys, ttl_s=approvals.ttl_s, wait=approvals.wait)
    nodes = dict(graph.nodes)
    for name in gates:
        nodes[name] = nodes[name].copy({"bound": _recording(nodes[name].bound, approvals)})
    guard = ToolGuard(tools.bound, gated, approvals, records, graph.checkpointer)
    nodes["tools"] = tools.copy(
        {"bound": RunnableLambda(guard.run, afunc=guard.arun, name="tools")}
    )
    return graph.copy(update={"nodes": nodes})


def _recording(node: Any, approvals: Approvals) -> RunnableLambda[Any, Any]:
    """The middleware node, its verdict recorded once it returns (never on an interrupt)."""

    def record(state: Any, config: RunnableConfig) -> Any:
        out = node.invoke(state, config)
        _record(approvals, config, _verdict(state, out))
        return out

    async def arecord(state: Any, config: RunnableConfig) -> Any:
        out = await node.ainvoke(state, config)
        await asyncio.to_thread(_record, approvals, config, _verdict(state, out))
        return out

    return RunnableLambda(record, afunc=arecord, name=getattr(node, "name", None))


def _verdict(state: Any, out: Any) -> list[tuple[str, str, dict[str, Any]]]:
    """The calls the middleware let through, with the arguments they are to run with.

    Not those it answered itself (a reject or a respond keeps the call beside its answer).
    """
    given = out if isinstance(out, dict) else {}
    messages = list(given.get("messages") or [])
    ai = next((m for m in messages if isinstance(m, AIMessage)), None)
    if ai is None:  # nothing needed review: the proposed calls stand as they are
        ai = next((m for m in reversed(_messages(state)) if isinstance(m, AIMessage)), None)
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    edits = given.get(EDITS) or {}
    calls = []
    for c in ai.tool_calls if ai is not None else []:
        if not c.get("id") or c["id"] in answered:
            continue
        edited = edits.get(c["id"])
        name, args = (edited["name"], edited["args"]) if edited else (c["name"], c["args"])
        calls.append((str(c["id"]), name, args))
    return calls


def _messages(state: Any) -> list[Any]:
    got = state.get("messages") if isinstance(state, dict) else getattr(state, "messages", None)
    return list(got or [])


def _record(
    approvals: Approvals, config: RunnableConfig, calls: Iterable[tuple[str, str, dict[str, Any]]]
) -> None:
    granted = {
        call_id: GateDecision(action="approve", digest=digest(name, args))
        for call_id, name, args in calls
    }
    approvals.record(thread_of(config), granted, fence=fence_of(config))


@dataclass
class Screened:
    """One tools step sorted.

    Calls to run (with the attempts that claimed them) and the answers given instead of running (a
    replayed result, a rejection, a refusal).
    """

    run: list[Call] = field(default_factory=list)
    attempts: dict[str, str] = field(default_factory=dict)
    answers: list[ToolMessage] = field(default_factory=list)


class ToolGuard:
    """The `tools` node: the gated calls screened, then the rest handed to the ToolNode."""

    def __init__(
        self,
        node: ToolNode,
        gated: set[str],
        approvals: Approvals,
        records: Records,
        checkpointer: Any,
    ) -> None:
        self.node, self.gated, self.approvals, self.records = node, gated, approvals, records
        self.saver = checkpointer if isinstance(checkpointer, BaseCheckpointSaver) else None

    def run(self, given: Any, config: RunnableConfig) -> Any:
        calls = self._as_run(_calls_of(given), given, config)
        if not any(c["name"] in self.gated for c in calls):
            return self.node.invoke(given, config)
        rejected = self._ask(self._unapproved(calls, config), config)
        screened = self._claim(calls, rejected, config)
        out = self.node.invoke(screened.run, config) if screened.run else {"messages": []}
        self._settle(screened, out, config)
        return _with(out, screened.answers)

    async def arun(self, given: Any, config: RunnableConfig) -> Any:
        calls = await asyncio.to_thread(self._as_run, _calls_of(given), given, config)
        if not any(c["name"] in self.gated for c in calls):
            return await self.node.ainvoke(given, config)
        rejected = self._ask(await asyncio.to_thread(self._unapproved, calls, config), config)
        screened = await asyncio.to_thread(self._claim, calls, rejected, config)
        out = await self.node.ainvoke(screened.run, config) if screened.run else {"messages": []}
        await asyncio.to_thread(self._settle, screened, out, config)
        return _with(out, screened.answers)

    def _as_run(self, calls: list[Call], given: Any, config: RunnableConfig) -> list[Call]:
        """The calls with the name and arguments they will run with.

        The middleware applies a reviewer's edit from the state at tool time, so the check must see
        it too (read from the input state, or the checkpoint the step started from). The originals
        are kept in `original` for the ToolNode, which applies the same edit itself.
        """
        edits = _edits(given) if isinstance(given, dict) and "messages" in given else None
        if edits is None and any(c["name"] in self.gated for c in calls):
            edits = self._saved_edits(config)
        out = []
        for call in calls:
            edited = (edits or {}).get(str(call.get("id") or ""))
            effective = (
                {**call, "name": edited["name"], "args": edited["args"]}
                if isinstance(edited, dict)
                else dict(call)
            )
            out.append({**effective, "original": call})
        return out

    def _saved_edits(self, config: RunnableConfig) -> dict[str, Any]:
        if self.saver is None:
            return {}
        ns = str((config.get("configurable") or {}).get("checkpoint_ns") or "")
        parent = ns.rsplit("|", 1)[0] if "|" in ns else ""
        saved = self.saver.get_tuple(
            {"configurable": {"thread_id": thread_of(config), "checkpoint_ns": parent}}
        )
        return _edits(saved.checkpoint["channel_values"]) if saved is not None else {}

    def _unapproved(self, calls: list[Call], config: RunnableConfig) -> list[Call]:
        """The gated calls with no unspent approval for these arguments (nothing written)."""
        thread = thread_of(config)
        out = []
        for call in calls:
            if call["name"] not in self.gated:
                continue
            held = self.approvals.held(thread, str(call.get("id") or ""))
            if held is None or held[0].digest != digest(call["name"], call["args"]):
                out.append(call)
        return out

    def _ask(self, unapproved: list[Call], config: RunnableConfig) -> dict[str, str]:
        """Back to a reviewer with the calls that came without an approval.

        Their answer is recorded like the middleware's. Returns the rejected calls' ids and
        messages.
        """
        if not unapproved:
            return {}
        answer = interrupt(
            {
                "action_requests": [
                    {
                        "name": c["name"],
                        "args": c["args"],
                        "description": f"{c['name']} came to run with no reviewer's decision "
                        "recorded (a state update, a replay or a fork)",
                    }
                    for c in unapproved
                ],
                "review_configs": [
                    {"action_name": c["name"], "allowed_decisions": ["approve", "reject"]}
                    for c in unapproved
                ],
            }
        )
        decisions = answer.get("decisions") if isinstance(answer, dict) else None
        if not isinstance(decisions, list) or len(decisions) != len(unapproved):
            raise ValueError(
                f"answer the {len(unapproved)} pending call(s) with a decisions "
                "list, one approve or reject each"
            )
        granted = {
            str(c.get("id")): GateDecision(action="approve", digest=digest(c["name"], c["args"]))
            for c, d in zip(unapproved, decisions, strict=True)
            if isinstance(d, dict) and d.get("type") == "approve"
        }
        rejected = {
            str(c.get("id")): str(d.get("message") or "rejected by the reviewer")
            if isinstance(d, dict)
            else "rejected by the reviewer"
            for c, d in zip(unapproved, decisions, strict=True)
            if str(c.get("id")) not in granted
        }
        self.approvals.record(thread_of(config), granted, rejected, fence=fence_of(config))
        return rejected

    def _claim(
        self, calls: list[Call], rejected: dict[str, str], config: RunnableConfig
    ) -> Screened:
        """Each gated call claims its idempotency record and spends its approval in the same script.

        Of two executions of one approved call, one runs, the other is answered.
        """
        thread, fence, screened = thread_of(config), fence_of(config), Screened()
        for call in calls:
            call_id = str(call.get("id") or "")
            if call["name"] not in self.gated:
                screened.run.append(call["original"])
                continue
            if call_id in rejected:
                screened.answers.append(_refused(call, f"was rejected: {rejected[call_id]}"))
                continue
            held = self.approvals.held(thread, call_id)
            if held is None or held[0].digest != digest(call["name"], call["args"]):
                screened.answers.append(_refused(call, "lost its approval to another execution"))
                continue
            claim = self.records.claim(
                thread,
                call_id,
                tool=call["name"],
                digest=args_digest(call["name"], call["args"]),
                key=call_id,
                fence=fence,
                spend=self.approvals.spend(thread, call_id, held[1]),
            )
            if claim.outcome == "claimed":
                screened.run.append(call["original"])
                screened.attempts[call_id] = claim.attempt
            elif claim.outcome == "done":
                screened.answers.append(
                    ToolMessage(content=claim.result or "", name=call["name"], tool_call_id=call_id)
                )
            else:
                screened.answers.append(
                    _refused(
                        call,
                        f"its record says {claim.outcome}; it is "
                        "not run again without a new review",
                    )
                )
        return screened

    def _settle(self, screened: Screened, out: Any, config: RunnableConfig) -> None:
        results = {m.tool_call_id: m for m in _tool_messages(out)}
        for call_id, attempt in screened.attempts.items():
            message = results.get(call_id)
            self.records.settle(
                thread_of(config),
                call_id,
                attempt=attempt,
                status="done",
                result=str(message.content) if message is not None else "",
                fence=fence_of(config),
            )


def _edits(state: Any) -> dict[str, Any]:
    found = state.get(EDITS) if isinstance(state, dict) else None
    return found if isinstance(found, dict) else {}


def _refused(call: Call, why: str) -> ToolMessage:
    return ToolMessage(
        content=f"not run: {call['name']} {why}",
        name=call["name"],
        tool_call_id=str(call.get("id") or ""),
        status="error",
    )


def _calls_of(given: Any) -> list[Call]:
    """The tool calls a ToolNode would run for this input.

    The input is a Send's list of calls, a call with its context, or a state whose newest AI message
    holds them.
    """
    if (
        isinstance(given, list)
        and given
        and isinstance(given[-1], dict)
        and given[-1].get("type") == "tool_call"
    ):
        return [dict(c) for c in given]
    if isinstance(given, dict) and given.get("__type") == "tool_call_with_context":
        return [dict(given["tool_call"])]
    ai = next((m for m in reversed(_messages(given)) if isinstance(m, AIMessage)), None)
    return [{**c, "type": "tool_call"} for c in (ai.tool_calls if ai is not None else [])]


def _tool_messages(out: Any) -> list[ToolMessage]:
    items = out if isinstance(out, list) else [out]
    found: list[ToolMessage] = []
    for item in items:
        messages = item.get("messages") if isinstance(item, dict) else None
        found += [m for m in messages or [] if isinstance(m, ToolMessage)]
    return found


def _with(out: Any, answers: list[ToolMessage]) -> Any:
    """The ToolNode's update with the answers given instead of running added."""
    if not answers:
        return out
    if isinstance(out, dict) and isinstance(out.get("messages"), list):
        return {**out, "messages": [*out["messages"], *answers]}
    return [*(out if isinstance(out, list) else [out]), {"messages": answers}]
