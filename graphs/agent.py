"""The agent graph: plan, act, observe, compact and human_gate, with fixed and routed edges."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import redis
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import BaseStore

from graphwright.checkpoints.keys import Keys
from graphwright.checkpoints.trace import TraceWriter
from graphwright.nodes.act import act
from graphwright.nodes.clock import timed
from graphwright.nodes.compact import compact
from graphwright.nodes.deps import AgentDeps, Limits
from graphwright.nodes.human_gate import human_gate
from graphwright.nodes.model_call import ModelCall
from graphwright.nodes.observe import observe
from graphwright.nodes.plan import plan
from graphwright.nodes.prompt import rules_for
from graphwright.nodes.purpose import with_purpose
from graphwright.nodes.routing import after_act, after_gate, after_observe, after_plan
from graphwright.nodes.state import AgentState
from graphwright.nodes.tokens import token_counter
from graphwright.tools.approvals import Approvals
from graphwright.tools.executor import ToolExecutor
from graphwright.tools.policy import Policy
from graphwright.tools.registry import ToolRegistry

AgentGraph = CompiledStateGraph[Any, Any, Any, Any]


def build_agent_graph(
    *,
    tools: ToolRegistry,
    model: BaseChatModel,
    redis_client: redis.Redis,
    policy: Policy | None = None,
    limits: Limits | None = None,
    keys: Keys | None = None,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
    name: str = "agent",
    role: str = "",
    store: BaseStore | None = None,
    clock: Callable[[], float] = time.monotonic,
    model_call: ModelCall | None = None,
) -> AgentGraph:
    """Compile the agent. `redis_client` holds tool idempotency records and the trace."""
    keys = keys or Keys()
    limits = limits or Limits()
    executor = ToolExecutor(tools, redis_client, keys=keys)
    bound = [spec.as_langchain_tool() for spec in tools]
    # "auto" said out loud: a local server (llama.cpp) offers no tools when it is left unsaid.
    planner = model.bind_tools(bound, tool_choice="auto") if bound else model
    deps = AgentDeps(
        model=model,
        planner=with_purpose(planner, "plan"),
        registry=tools,
        executor=executor,
        approvals=Approvals(redis_client, keys, ttl_s=executor.records.ttl_s),
        policy=policy or Policy(),
        limits=limits,
        trace=TraceWriter(redis_client, keys),
        role=role,
        clock=clock,
        count=token_counter(model),
        rules=rules_for(tools),
        model_call=replace(model_call or ModelCall(), retries=limits.model_retries),
    )
    builder = StateGraph(AgentState)
    builder.add_node("plan", timed(plan, deps))
    builder.add_node("act", timed(act, deps))
    builder.add_node("observe", timed(observe, deps))
    builder.add_node("compact", timed(compact, deps))
    builder.add_node("human_gate", timed(human_gate, deps))
    builder.add_edge(START, "plan")
    builder.add_conditional_edges("plan", after_plan)
    builder.add_conditional_edges("human_gate", after_gate)
    builder.add_conditional_edges("act", after_act)
    builder.add_conditional_edges("observe", after_observe)
    builder.add_edge("compact", "plan")
    return builder.compile(checkpointer=checkpointer, name=name, store=store)


def start_input(
    goal: str, constraints: list[str] | None = None, memories: list[str] | None = None
) -> dict[str, Any]:
    """The input of a new turn on a thread: the goal as a user message, per-turn counters reset.

    The conversation (messages, the handoff summary) and earlier constraints carry over;
    repeat detection, rejections, budgets and the deadline start again for the turn.
    """
    turn = uuid.uuid4().hex
    return {
        "messages": [HumanMessage(goal, id=f"user-{turn}")],
        "turn_id": turn,
        "goal": goal,
        "constraints": list(constraints or []),
        "memories": list(memories or []),
        "proposed": [],
        "model_calls": 0,
        "tool_errors": 0,
        "tokens": 0,
        "needs_compaction": False,
        "end_requested": None,
        "stop_reason": None,
        "answer": None,
        "plan_notes": "",
        "started_at": time.time(),
        "active_s": 0.0,
    }
