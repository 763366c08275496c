"""The order inquiry as a workflow: fixed edges in code, the model only extracts and phrases."""

from __future__ import annotations

import time
from functools import partial
from typing import Any

from langgraph.graph import END, START, StateGraph

from graphwright.checkpoints.trace import TraceWriter
from graphwright.graphs.context import Graph, GraphContext, RunInput
from graphwright.nodes.model_call import ModelCall
from graphwright.nodes.order_routing import after_extract, after_lookup
from graphwright.nodes.order_steps import (
    OrderDeps,
    OrderState,
    ask,
    extract,
    failed,
    lookup,
    not_found,
    phrase,
    track,
)
from graphwright.tools.builtin import build_registry
from graphwright.tools.executor import ToolExecutor


def order_input(run: RunInput) -> dict[str, Any]:
    """A new turn: the question is new, the order id of the previous turn stays for a follow-up."""
    return {
        "goal": run.goal,
        "constraints": run.constraints,
        "order": None,
        "tracking": None,
        "error": None,
        "answer": None,
        "stop_reason": None,
        "model_calls": 0,
        "tokens": 0,
        "started_at": time.time(),
    }


def build_order_support_graph(ctx: GraphContext) -> Graph:
    """The fixed order-support workflow: extract the order id, look it up, track it, answer."""
    deps = OrderDeps(
        model=ctx.model,
        executor=ToolExecutor(build_registry(), ctx.redis_client, keys=ctx.keys),
        trace=TraceWriter(ctx.redis_client, ctx.keys),
        model_call=ModelCall(retries=ctx.limits.model_retries),
    )
    builder = StateGraph(OrderState)
    for name, step in (
        ("extract", extract),
        ("lookup", lookup),
        ("track", track),
        ("phrase", phrase),
        ("ask", ask),
        ("not_found", not_found),
        ("failed", failed),
    ):
        builder.add_node(name, partial(step, deps=deps))
    builder.add_edge(START, "extract")
    builder.add_conditional_edges("extract", after_extract)
    builder.add_conditional_edges("lookup", after_lookup)
    builder.add_edge("track", "phrase")
    for last in ("phrase", "ask", "not_found", "failed"):
        builder.add_edge(last, END)
    return builder.compile(checkpointer=ctx.checkpointer, name="order_support", store=ctx.store)
