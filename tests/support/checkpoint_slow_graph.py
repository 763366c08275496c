"""A graph plugin for the worker tests whose checkpoint write after its first step is slow, so
a test can kill the worker mid-checkpoint
(`GRAPHWRIGHT_GRAPHS=tests.support.checkpoint_slow_graph:register`).

The saver is the service's own, with `aput` wrapped: it marks `{prefix}:ckpt:slow` in
Redis, sleeps, then writes. Each node counts its runs in `{prefix}:ckpt:runs:NODE`.
"""

from __future__ import annotations

import asyncio
import copy
import operator
from typing import Annotated, Any

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from graphwright.graphs.registry import Graph, GraphContext, GraphRegistry

DELAY_S = 2.0


class State(TypedDict, total=False):
    steps: Annotated[list[str], operator.add]


def build(ctx: GraphContext) -> Graph:
    saver = copy.copy(ctx.checkpointer)
    original = saver.aput  # runs go through astream, so through the saver's aput
    marker = f"{ctx.keys.prefix}:ckpt:slow"

    async def slow_put(config: Any, checkpoint: Any, metadata: Any, versions: Any) -> Any:
        redis = ctx.redis_client
        if (metadata or {}).get("step") == 1 and not await asyncio.to_thread(
            redis.exists, f"{marker}:done"
        ):
            await asyncio.to_thread(redis.incr, marker)
            await asyncio.sleep(DELAY_S)
            await asyncio.to_thread(redis.set, f"{marker}:done", 1)
        return await original(config, checkpoint, metadata, versions)

    saver.aput = slow_put  # type: ignore[method-assign]

    def node(name: str) -> Any:
        def run(state: State) -> dict[str, Any]:
            ctx.redis_client.incr(f"{ctx.keys.prefix}:ckpt:runs:{name}")
            return {"steps": [name]}

        return run

    g = StateGraph(State)
    g.add_node("first", node("first"))
    g.add_node("last", node("last"))
    g.add_edge(START, "first")
    g.add_edge("first", "last")
    g.add_edge("last", END)
    return g.compile(checkpointer=saver)  # type: ignore[return-value]


def register(graphs: GraphRegistry) -> None:
    graphs.register(
        "slow_checkpoint",
        build,
        make_input=None,
        description="two steps; the checkpoint after the first is slow to write",
    )
