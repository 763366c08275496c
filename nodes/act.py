"""act: run the approved calls through the tools executor; reads in parallel, writes in order."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig

from graphwright.nodes.authorize import authorize, is_tainted
from graphwright.nodes.canonical import canonical
from graphwright.nodes.deps import AgentDeps
from graphwright.nodes.gate_models import digest
from graphwright.nodes.state import (
    AgentState,
    CallRecord,
    Outcome,
    ProposedCall,
    call_record,
    turn_calls,
)
from graphwright.nodes.stops import repeat_run
from graphwright.nodes.tracing import fence_of, run_of, thread_of
from graphwright.tools.executor import Observation, ToolCall, ToolError


def repeat_warning(call: ProposedCall) -> Observation:
    """What the model hears instead of a second identical call in a row."""
    return Observation(
        ok=False,
        tool=call["name"],
        call_id=call["id"],
        error=ToolError(
            type="tool_error",
            message=(
                f"repeated_call: you already called {call['name']} with these exact arguments "
                "and the result is above; it will not change. Change strategy or answer. "
                "A third identical call ends the run."
            ),
            retryable=False,
        ),
    )


def to_message(obs: Observation) -> ToolMessage:
    """The observation as the model reads it; the artifact keeps what observe needs."""
    return ToolMessage(
        content=obs.for_model(),
        tool_call_id=obs.call_id,
        name=obs.tool,
        status="success" if obs.ok else "error",
        artifact={
            "ok": obs.ok,
            "trust": obs.trust,
            "replayed": obs.replayed,
            "error_type": obs.error.type if obs.error else None,
        },
    )


def act(state: AgentState, config: RunnableConfig, *, deps: AgentDeps) -> dict[str, Any]:
    """Execute `proposed`; every outcome becomes a ToolMessage, none raises."""
    thread_id = thread_of(config)
    calls = list(state.get("proposed") or [])
    log = turn_calls(state)  # repeats are counted within the turn
    earlier = len(log)
    plan: list[tuple[ProposedCall, Observation | None]] = []
    tainted = is_tainted(state, deps, thread_id)
    gated: list[ProposedCall] = []  # back to the gate: they came without their approval
    running: list[ProposedCall] = []
    for proposed in calls:
        allowed = authorize(proposed, tainted=tainted, deps=deps, thread_id=thread_id)
        if not isinstance(allowed, Observation) and allowed["action"] == "needs_approval":
            gated.append(allowed)
            continue
        running.append(proposed)
        denied = allowed if isinstance(allowed, Observation) else None
        call = proposed if isinstance(allowed, Observation) else allowed
        # A write settled at the gate after an unknown outcome is that same call, not a repeat.
        resolved = bool(call.get("retry")) or "settled" in call
        repeats = 0 if resolved else repeat_run(log, call["name"], canonical(call["args"]))
        blocked = repeat_warning(call) if repeats >= 1 else denied
        outcome: Outcome = "repeat" if repeats >= 1 else "ok"
        log.append(call_record(state, call, outcome))
        plan.append((call, blocked))
    fence = fence_of(config)
    observations = run_all(state, deps, thread_id, run_of(config), plan, fence)
    records = log[earlier:]
    done, held = split_unknown(running, records, observations)
    # A decision settles one unknown outcome once: the next must come from a reviewer again.
    deps.approvals.record(
        thread_id, {}, [c["id"] for c in held if c["action"] == "outcome_unknown"], fence=fence
    )
    for record, obs in done:
        if record["outcome"] == "ok" and not obs.ok:
            record["outcome"] = "error"
    return {
        "messages": [to_message(o) for _, o in done],
        "call_log": [r for r, _ in done],
        "proposed": held + gated,
    }


def is_unknown(obs: Observation) -> bool:
    """Whether a write's outcome is unknown (its process died or it timed out mid-call)."""
    return obs.error is not None and obs.error.type == "outcome_unknown"


def split_unknown(
    calls: list[ProposedCall], records: list[CallRecord], observations: list[Observation]
) -> tuple[list[tuple[CallRecord, Observation]], list[ProposedCall]]:
    """Calls that ran, and those held for the gate.

    A write of unknown outcome and the calls after it, which wait until a reviewer has settled it.
    """
    done: list[tuple[CallRecord, Observation]] = []
    held: list[ProposedCall] = []
    for i, call in enumerate(calls):
        obs = observations[i] if i < len(observations) else None
        if obs is not None and is_unknown(obs):
            held.append(
                {
                    "id": call["id"],
                    "name": call["name"],
                    "args": call["args"],
                    "action": "outcome_unknown",
                    "reason": obs.error.message if obs.error else "",
                    "idempotency_key": obs.idempotency_key or "",
                }
            )
        elif obs is None:
            held.append(call)
        else:
            done.append((records[i], obs))
    return done, held


def run_all(
    state: AgentState,
    deps: AgentDeps,
    thread_id: str,
    run_id: str,
    plan: Sequence[tuple[ProposedCall, Observation | None]],
    fence: int | None = None,
) -> list[Observation]:
    """Independent reads run in parallel; as soon as a write is among them, all run in order.

    In order, the calls after a write whose outcome is unknown are not run (and not returned).
    """
    step = state.get("model_calls") or 0

    def one(item: tuple[ProposedCall, Observation | None]) -> Observation:
        call, blocked = item
        started = time.time()
        tool_call = ToolCall(name=call["name"], args=call["args"], id=call["id"])
        if blocked is not None:
            obs = blocked
        elif "settled" in call:
            obs = deps.executor.mark_done(
                tool_call, call["settled"], thread_id=thread_id, fence=fence
            )
        else:
            retry = bool(call.get("retry"))  # as recorded (authorize): spent by its claim
            spend = (
                deps.approvals.spend_retry(
                    thread_id, call["id"], digest(call["name"], call["args"])
                )
                if retry
                else None
            )
            obs = deps.executor.execute(
                tool_call, thread_id=thread_id, fence=fence, retry=retry, spend=spend
            )
        deps.trace.emit(
            thread_id,
            "tool_call",
            fence=fence,
            run_id=run_id,
            step=step,
            node="act",
            tool=call["name"],
            call_id=call["id"],
            args=call["args"],
            start=started,
            end=time.time(),
            ok=obs.ok,
            replayed=obs.replayed,
            result=summarize(obs.result) if obs.ok else None,
            error=obs.error.model_dump() if obs.error else None,
        )
        return obs

    writes = any(
        (spec := deps.registry.get(call["name"])) is not None and spec.risk == "write"
        for call, _ in plan
    )
    if writes or len(plan) < 2:
        done: list[Observation] = []
        for item in plan:
            done.append(one(item))
            if is_unknown(done[-1]):
                break
        return done
    with ThreadPoolExecutor(max_workers=min(8, len(plan)), thread_name_prefix="gw-act") as pool:
        return list(pool.map(one, plan))


def summarize(result: Any, limit: int = 300) -> str:
    """A short form of a result for the trace."""
    text = (
        result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, default=str)
    )
    return text if len(text) <= limit else text[:limit] + "…"
