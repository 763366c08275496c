"""The graphs the chaos campaign kills: the agent with a slow read and a slow external write.

Loaded with `GRAPHWRIGHT_GRAPHS=bench.chaos_graphs:register`. `book` is an ordinary
write that does not dedupe on its key: each effect creates one new file in the
directory named by `CHAOS_EFFECTS` (outside Redis), named after the thread, holding
the idempotency key. `chaos_ungated` runs it without approval, `chaos_gated` asks.
"""

from __future__ import annotations

import os
import time
import uuid
from functools import partial
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from graphwright.graphs.agent import build_agent_graph
from graphwright.graphs.registry import Graph, GraphContext, GraphRegistry
from graphwright.tools.policy import Policy
from graphwright.tools.registry import ToolRegistry
from graphwright.tools.spec import ToolContext

EFFECTS_ENV = "CHAOS_EFFECTS"
DELAY_ENV = "CHAOS_DELAY_S"  # each slow step's duration, 0.2 s by default


class LookupArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    room: str = Field(description="Room name, e.g. 'Aurora'.")


class BookArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    room: str = Field(description="Room name, e.g. 'Aurora'.")
    slot: str = Field(description="Slot as YYYY-MM-DDTHH:MM, e.g. '2026-12-01T10:00'.")


def delay() -> float:
    return float(os.environ.get(DELAY_ENV, "0.2"))


def effects_of(directory: Path, thread_id: str) -> list[str]:
    """The idempotency keys of every effect the thread's bookings had, one per effect."""
    return [p.read_text() for p in sorted(directory.glob(f"{thread_id}.*"))]


def tools() -> ToolRegistry:
    reg = ToolRegistry()

    @reg.tool(LookupArgs)
    def lookup_room(args: LookupArgs, ctx: ToolContext) -> dict[str, str]:
        """Whether a room is free (slow)."""
        time.sleep(delay())
        return {"room": args.room, "free": "yes"}

    @reg.tool(BookArgs, risk="write", timeout_s=30)
    def book(args: BookArgs, ctx: ToolContext) -> dict[str, str]:
        """Book a room: an external system that does not dedupe (slow before and after)."""
        time.sleep(delay())
        folder, name = Path(os.environ[EFFECTS_ENV]), uuid.uuid4().hex
        draft = folder / f".draft-{name}"
        with draft.open("x") as effect:
            effect.write(ctx.idempotency_key or "")
            effect.flush()
            os.fsync(effect.fileno())
        draft.rename(
            folder / f"{ctx.thread_id}.{name}"
        )  # the effect: one new file, whole or absent
        time.sleep(delay())
        return {"booked": args.room, "slot": args.slot}

    return reg


def build(ctx: GraphContext, policy: Policy | None) -> Graph:
    return build_agent_graph(
        tools=tools(),
        model=ctx.model,
        redis_client=ctx.redis_client,
        policy=policy,
        limits=ctx.limits,
        keys=ctx.keys,
        checkpointer=ctx.checkpointer,
    )


def register(graphs: GraphRegistry) -> None:
    graphs.register(
        "chaos_ungated",
        partial(build, policy=Policy(per_tool={"book": "never"})),
        description="slow read, then an ungated slow write",
        tools=tools,
    )
    graphs.register(
        "chaos_gated",
        partial(build, policy=None),
        description="slow read, then a gated slow write",
        tools=tools,
    )
