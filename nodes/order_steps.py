"""The order-support workflow's steps: code looks things up, the model only extracts and phrases.

Each step is a small function of state plus injected services; routing lives in
`graphwright.nodes.order_routing`.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel, Field
from typing_extensions import TypedDict  # pydantic builds JSON schemas from it on 3.11

from graphwright.checkpoints.trace import TraceWriter
from graphwright.nodes.jsonreply import StructuredReplyError, structured_reply, text_of
from graphwright.nodes.model_call import ModelCall, invoke_model
from graphwright.nodes.purpose import Purpose, with_purpose
from graphwright.nodes.tracing import fence_of, run_of, thread_of, total_tokens, trace_model_call
from graphwright.tools.executor import ToolCall, ToolExecutor

STRICT_ID = re.compile(r"(?<![A-Za-z0-9])[A-Z]\d{4,10}(?![A-Za-z0-9])")
CJK = re.compile(r"[\u4e00-\u9fff]")
EXTRACT_PROMPT = """Extract the order id from the customer's message.
Order ids are one letter and 4 to 10 digits, like A1001; customers may write them in
lower case or with spaces. Reply with JSON only: {"order_id": "A1001"} or {"order_id": null}."""
PHRASE_PROMPT = """Phrase the answer to the customer's question from these facts only.
Do not add any status, date or number that the facts do not contain. Answer in the
customer's language, in one or two sentences."""


class OrderState(TypedDict, total=False):
    """State of one order inquiry."""

    goal: str  # the customer's message
    constraints: list[str]  # hard constraints (passed to the phrasing step)
    order_id: str | None  # extracted id, upper case; kept for a follow-up turn without one
    order: dict[str, Any] | None  # get_order result
    tracking: dict[str, Any] | None  # get_tracking result
    error: dict[str, Any] | None  # the failing tool's error, if any
    answer: str | None  # the reply
    stop_reason: str | None  # "answered" once a reply exists
    model_calls: int  # model calls so far (extraction, phrasing)
    tokens: int  # tokens used
    started_at: float  # wall-clock start


@dataclass(frozen=True, kw_only=True)
class OrderDeps:
    """What the order-support nodes are given: the model, the tools and the trace."""

    model: BaseChatModel
    executor: ToolExecutor
    trace: TraceWriter
    model_call: ModelCall = field(default_factory=ModelCall)  # retries of a failing model


class Extracted(BaseModel):
    """The extraction step's reply."""

    order_id: str | None = Field(description="the order id as written, or null")


def _model(
    state: OrderState,
    deps: OrderDeps,
    config: RunnableConfig,
    node: Purpose,
    system: str,
    human: str,
) -> tuple[str, dict[str, Any]]:
    started = time.time()
    model = with_purpose(deps.model, node)
    reply = invoke_model(
        deps.model, model, [SystemMessage(system), HumanMessage(human)], config, how=deps.model_call
    )
    return text_of(reply), _counted(state, deps, config, node, reply, started)


def _counted(
    state: OrderState,
    deps: OrderDeps,
    config: RunnableConfig,
    node: str,
    reply: AIMessage,
    started: float,
) -> dict[str, Any]:
    """Trace the model call and count it."""
    calls = (state.get("model_calls") or 0) + 1
    trace_model_call(deps.trace, config, node=node, step=calls, reply=reply, started=started)
    return {"model_calls": calls, "tokens": (state.get("tokens") or 0) + total_tokens(reply)}


def extract(state: OrderState, config: RunnableConfig, *, deps: OrderDeps) -> dict[str, Any]:
    """A regular expression first; the model only for free-form text that has digits in it.

    A follow-up with no id at all ("has it shipped yet?") is about the previous turn's order.
    """
    goal = state.get("goal", "")
    strict = STRICT_ID.search(goal)
    if strict:
        return {"order_id": strict.group(0)}
    if not re.search(r"\d", goal):
        return {"order_id": state.get("order_id")}
    started = time.time()
    messages = [SystemMessage(EXTRACT_PROMPT), HumanMessage(goal)]
    found: str | None = None
    try:
        extracted, reply = structured_reply(
            deps.model, Extracted, messages, config, purpose="extract_order"
        )
        found = extracted.order_id
    except StructuredReplyError as exc:
        if exc.reply is None:
            raise
        reply = exc.reply
    counters = _counted(state, deps, config, "extract", reply, started)
    candidate = re.sub(r"[\s-]", "", str(found or "")).upper()
    return {"order_id": candidate if STRICT_ID.fullmatch(candidate) else None, **counters}


def _tool(
    state: OrderState, deps: OrderDeps, config: RunnableConfig, name: str, args: dict[str, Any]
) -> dict[str, Any]:
    thread_id = thread_of(config)
    call_id = f"{name}-{state.get('started_at', 0):.6f}"
    started = time.time()
    obs = deps.executor.execute(
        ToolCall(name=name, args=args, id=call_id), thread_id=thread_id, fence=fence_of(config)
    )
    deps.trace.emit(
        thread_id,
        "tool_call",
        fence=fence_of(config),
        run_id=run_of(config),
        step=state.get("model_calls") or 0,
        node=name,
        tool=name,
        call_id=call_id,
        args=args,
        start=started,
        end=time.time(),
        ok=obs.ok,
        replayed=obs.replayed,
        result=None if not obs.ok else obs.result,
        error=obs.error.model_dump() if obs.error else None,
    )
    if obs.ok:
        return {"result": obs.result}
    return {"error": {"tool": name, **(obs.error.model_dump() if obs.error else {})}}


def lookup(state: OrderState, config: RunnableConfig, *, deps: OrderDeps) -> dict[str, Any]:
    """Look up the order the goal names."""
    out = _tool(state, deps, config, "get_order", {"order_id": state.get("order_id")})
    return {"order": out.get("result"), "error": out.get("error")}


def track(state: OrderState, config: RunnableConfig, *, deps: OrderDeps) -> dict[str, Any]:
    """Track the order's shipment."""
    order = state.get("order") or {}
    out = _tool(state, deps, config, "get_tracking", {"tracking_no": order.get("tracking_no")})
    return {"tracking": out.get("result"), "error": out.get("error")}


def phrase(state: OrderState, config: RunnableConfig, *, deps: OrderDeps) -> dict[str, Any]:
    """The one place the model writes: the facts, in words."""
    facts = {
        "question": state.get("goal"),
        "order": state.get("order"),
        "tracking": state.get("tracking"),
        "tracking_error": (state.get("error") or {}).get("message"),
        "constraints": state.get("constraints") or [],
    }
    text, counters = _model(
        state, deps, config, "phrase", PHRASE_PROMPT, json.dumps(facts, ensure_ascii=False)
    )
    return _answer(text, deps, config, counters)


def _answer(
    text: str, deps: OrderDeps, config: RunnableConfig, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    deps.trace.emit(
        thread_of(config),
        "stop",
        fence=fence_of(config),
        run_id=run_of(config),
        step=0,
        stop_reason="answered",
        answer=text,
    )
    return {"answer": text, "stop_reason": "answered", **(extra or {})}


def ask(state: OrderState, config: RunnableConfig, *, deps: OrderDeps) -> dict[str, Any]:
    """Ask for the order id the goal lacks."""
    zh = bool(CJK.search(state.get("goal", "")))
    return _answer(
        "请提供订单号（例如 A1001），我再帮你查询。"
        if zh
        else "Please tell me the order id (for example A1001) and I will look it up.",
        deps,
        config,
    )


def not_found(state: OrderState, config: RunnableConfig, *, deps: OrderDeps) -> dict[str, Any]:
    """Say the order does not exist."""
    zh, order_id = bool(CJK.search(state.get("goal", ""))), state.get("order_id")
    return _answer(
        f"没有找到订单 {order_id}，请核对订单号。"
        if zh
        else f"I could not find order {order_id}; please check the id.",
        deps,
        config,
    )


def failed(state: OrderState, config: RunnableConfig, *, deps: OrderDeps) -> dict[str, Any]:
    """Say which tool failed and why."""
    zh, err = bool(CJK.search(state.get("goal", ""))), state.get("error") or {}
    return _answer(
        f"查询失败（{err.get('tool')}）：{err.get('message')}"
        if zh
        else f"The lookup failed ({err.get('tool')}): {err.get('message')}",
        deps,
        config,
    )
