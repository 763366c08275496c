"""A user's graph plugin for the crash tests: the agent whose get_schedule is slow.

Loaded with `GRAPHWRIGHT_GRAPHS=tests.support.slow_graphs:register` (or `:register_all`).
The slow tool counts its starts in Redis so a test knows when to kill the process mid-step.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatResult

from graphwright.graphs.agent import build_agent_graph
from graphwright.graphs.registry import Graph, GraphContext, GraphRegistry
from graphwright.offline import OfflineChatModel
from graphwright.testing.until import scaled
from graphwright.tools.builtin import EventArgs, ScheduleArgs, build_registry
from graphwright.tools.policy import Policy
from graphwright.tools.registry import ToolRegistry
from graphwright.tools.spec import ToolContext

DELAY_S = 2.0


def slow_tools() -> ToolRegistry:
    builtin = build_registry()
    original = builtin.get("get_schedule")
    assert original is not None

    def slow_schedule(args: ScheduleArgs, ctx: ToolContext) -> object:
        ctx.redis.incr(f"{ctx.keys.prefix}:slow:started")
        time.sleep(DELAY_S)
        return original.func(args, ctx)

    reg = ToolRegistry([s for s in builtin if s.name != "get_schedule"])
    reg.add(replace(original, func=slow_schedule))
    return reg


EFFECTS_ENV = "SLOW_GRAPHS_EFFECTS"  # file the slow write appends one line to per effect
WRITE_DELAY_S = 0.5


def slow_write_tools() -> ToolRegistry:
    """create_event as a plain external write: slow before and after its effect, not keyed.

    Each effect appends a line to the file named by SLOW_GRAPHS_EFFECTS, outside Redis.
    Redis counters `slow:write_started` and `slow:write_effected` tell a test where it is;
    `slow:hold` (when set) makes it wait after its effect until the key is deleted.
    """
    builtin = build_registry()
    original = builtin.get("create_event")
    assert original is not None

    def slow_create(args: EventArgs, ctx: ToolContext) -> object:
        base = f"{ctx.keys.prefix}:slow"
        ctx.redis.incr(f"{base}:write_started")
        time.sleep(WRITE_DELAY_S)
        with Path(os.environ[EFFECTS_ENV]).open("a") as effects:
            effects.write(f"{ctx.idempotency_key}\n")
        ctx.redis.incr(f"{base}:write_effected")
        while ctx.redis.exists(f"{base}:hold"):
            time.sleep(0.02)
        time.sleep(WRITE_DELAY_S)
        return {"title": args.title, "start_time": args.start_time, "end_time": args.end_time}

    reg = ToolRegistry([s for s in builtin if s.name != "create_event"])
    reg.add(replace(original, func=slow_create, keyed=False))
    return reg


def dying_mail_tools() -> ToolRegistry:
    """send_email that kills its own process right after its effect, before the executor's
    record (the first time only: `slow:died` marks it)."""
    builtin = build_registry()
    original = builtin.get("send_email")
    assert original is not None

    def send_then_die(args: Any, ctx: ToolContext) -> object:
        result = original.func(args, ctx)
        if ctx.redis.set(f"{ctx.keys.prefix}:slow:died", 1, nx=True):
            os.kill(os.getpid(), signal.SIGKILL)
        return result

    reg = ToolRegistry([s for s in builtin if s.name != "send_email"])
    reg.add(replace(original, func=send_then_die))
    return reg


def build_slow_write(ctx: GraphContext, policy: Policy | None) -> Graph:
    return build_agent_graph(
        tools=slow_write_tools(),
        model=ctx.model,
        redis_client=ctx.redis_client,
        policy=policy,
        limits=ctx.limits,
        keys=ctx.keys,
        checkpointer=ctx.checkpointer,
    )


def build(ctx: GraphContext, policy: Policy | None) -> Graph:
    return build_agent_graph(
        tools=slow_tools(),
        model=ctx.model,
        redis_client=ctx.redis_client,
        policy=policy,
        limits=ctx.limits,
        keys=ctx.keys,
        checkpointer=ctx.checkpointer,
    )


def register(graphs: GraphRegistry) -> None:
    graphs.register(
        "slow_agent",
        lambda ctx: build(ctx, Policy(per_tool={"create_event": "never"})),
        description="agent with a slow get_schedule; create_event runs ungated",
        tools=slow_tools,
    )
    graphs.register(
        "slow_agent_gated",
        lambda ctx: build(ctx, None),
        description="agent with a slow get_schedule; writes are gated",
        tools=slow_tools,
    )
    graphs.register(
        "mail_then_die",
        lambda ctx: build_agent_graph(
            tools=dying_mail_tools(),
            model=ctx.model,
            redis_client=ctx.redis_client,
            policy=Policy(per_tool={"send_email": "never"}),
            limits=ctx.limits,
            keys=ctx.keys,
            checkpointer=ctx.checkpointer,
        ),
        description="send_email dies after its effect",
        tools=dying_mail_tools,
    )
    for name, policy in (
        ("slow_write", Policy(per_tool={"create_event": "never"})),
        ("slow_write_gated", None),
    ):
        graphs.register(
            name,
            partial(build_slow_write, policy=policy),
            tools=slow_write_tools,
            description="agent whose create_event is a slow, unkeyed external write",
        )


class SlowAnswerModel(OfflineChatModel):
    """The offline model, slow when it writes a final answer (counted in Redis first)."""

    client: Any = None
    marker: str = ""
    hold: str = ""  # when set: the answer waits while this key exists (at most 30 s)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        result = super()._generate(messages, stop, run_manager, **kwargs)
        message = result.generations[0].message
        if isinstance(message, AIMessage) and not message.tool_calls:
            self.client.incr(self.marker)
            if not self.hold:
                time.sleep(DELAY_S)
            deadline = time.monotonic() + scaled(30)
            while self.hold and self.client.exists(self.hold) and time.monotonic() < deadline:
                time.sleep(0.02)
        return result


def build_slow_answer(
    ctx: GraphContext, hold: bool = False, tools: ToolRegistry | None = None
) -> Graph:
    model = SlowAnswerModel(
        client=ctx.redis_client,
        marker=f"{ctx.keys.prefix}:slow:answering",
        hold=f"{ctx.keys.prefix}:slow:hold_answer" if hold else "",
    )
    return build_agent_graph(
        tools=tools or build_registry(),
        model=model,
        redis_client=ctx.redis_client,
        policy=Policy(per_tool={"create_event": "never"}),
        limits=ctx.limits,
        keys=ctx.keys,
        checkpointer=ctx.checkpointer,
    )


def register_all(graphs: GraphRegistry) -> None:
    register(graphs)
    graphs.register(
        "slow_answer",
        build_slow_answer,
        description="agent whose final answer is slow; create_event runs ungated",
    )
    graphs.register(
        "held_answer",
        partial(build_slow_answer, hold=True),
        description="agent whose final answer waits while slow:hold_answer exists",
    )
    graphs.register(
        "held_write",
        lambda ctx: build_slow_answer(ctx, hold=True, tools=slow_write_tools()),
        tools=slow_write_tools,
        description="slow_write, then an answer held as held_answer's",
    )
