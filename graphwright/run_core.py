"""The async run core behind every Orchestrator run.

Take the thread's lock, check and prepare the run, then hand it to `RunRecord`.

`Orchestrator.stream`/`stream_resume` drive these on the run loop from their thread;
the async twins await them. Redis is reached through the run loop's asyncio client only;
what may block (building a graph not built yet, a user's long-term memories) goes to the
loop's executor.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from langgraph.types import Command

from graphwright import run_meta, run_status
from graphwright.graphs.gates import gate_command, gate_of
from graphwright.graphs.registry import Graph, GraphSpec, RunInput
from graphwright.inputs import parse_input, user_messages
from graphwright.native import own_input
from graphwright.nodes.deps import Limits
from graphwright.nodes.gate_models import GateRequest
from graphwright.results import StepEvent
from graphwright.run_meta import MODEL_FAILED, checkpoint_of
from graphwright.run_record import run_config
from graphwright.streaming import RunMode
from graphwright_errors import NotFoundError, UserError

if TYPE_CHECKING:
    from graphwright.orchestrator import Orchestrator


async def start(
    orch: Orchestrator,
    graph: str,
    input: str | dict[str, Any] | RunInput,
    thread_id: str | None,
    limits: Limits | None,
    run_id: str | None,
    user_id: str | None,
    mode: RunMode,
) -> AsyncIterator[StepEvent]:
    """The run core of `stream`/`astream`, on the run loop, under the thread's lock."""
    spec = orch.graphs.get(graph)
    run_input = None if spec.native_input else parse_input(input)
    scopes = (
        orch.user_memory.scopes(user_id) if user_id is not None else []
    )  # checked before any read
    if thread_id is None and not orch.run_writes.cluster:
        new = _start_new(orch, spec, input, run_input, limits, scopes, user_id, run_id, mode)
        async for event in new:
            yield event
        return
    thread_id = thread_id or f"{graph}-{uuid.uuid4().hex[:12]}"
    async with orch.lifecycle.lock(thread_id, [orch.run_writes.read_meta(thread_id)]) as lock:
        meta = orch.run_writes.meta_of(thread_id, lock.reads[0])  # read under the lock
        compiled, payload, note = await _prepare(
            orch, spec, thread_id, meta, input, run_input, limits, scopes, user_id
        )
        async for event in orch.run_record.execute(  # a langgraph.json graph: its own input
            spec,
            compiled,
            thread_id,
            payload,
            payload if run_input is None else run_input,
            run_id,
            lock,
            mode,
            meta=meta,
            note=note,
        ):
            yield event


async def _start_new(
    orch: Orchestrator,
    spec: GraphSpec,
    input: str | dict[str, Any] | RunInput,
    run_input: RunInput | None,
    limits: Limits | None,
    scopes: list[str],
    user_id: str | None,
    run_id: str | None,
    mode: RunMode,
) -> AsyncIterator[StepEvent]:
    """The run core of a new thread: nothing of it to read, so its start goes with its lock.

    The graph, the input and the user's memories are ready before the lock is taken; the start
    write (checked against the lock's holder) rides in the acquisition's round trip.
    """
    thread_id = f"{spec.name}-{uuid.uuid4().hex[:12]}"
    compiled, payload, note = await _prepare(
        orch, spec, thread_id, {}, input, run_input, limits, scopes, user_id
    )
    run_id = run_id or str(uuid.uuid4())
    given = payload if run_input is None else run_input
    owner = uuid.uuid4().hex
    start = orch.run_record.start_with_lock(spec.name, thread_id, run_id, given, owner, note)
    async with orch.lifecycle.lock(thread_id, [start], owner_id=owner) as lock:
        started = orch.run_writes.written(thread_id, lock.reads[0])
        async for event in orch.run_record.execute(
            spec,
            compiled,
            thread_id,
            payload,
            given,
            run_id,
            lock,
            mode,
            note=note,
            started=started,
        ):
            yield event


async def compiled_graph(orch: Orchestrator, spec: GraphSpec, limits: Limits | None) -> Graph:
    """The compiled graph.

    One not built yet is built in the loop's executor (a builder or factory may block).
    """
    cached = orch.cached_graph(spec, limits)
    return cached if cached is not None else await asyncio.to_thread(orch.graph_for, spec, limits)


async def _prepare(
    orch: Orchestrator,
    spec: GraphSpec,
    thread_id: str,
    meta: dict[str, str],
    input: str | dict[str, Any] | RunInput,
    run_input: RunInput | None,
    limits: Limits | None,
    scopes: list[str],
    user_id: str | None,
) -> tuple[Graph, Any, dict[str, str]]:
    """Check the thread may start a run.

    Returns the compiled graph, the run's input, and the fields its start notes (the user's own
    messages, to remember at its end).
    """
    if meta.get("graph") and meta["graph"] != spec.name:
        raise UserError(
            f"thread {thread_id!r} belongs to graph {meta['graph']!r}, not {spec.name!r}"
        )
    compiled = await compiled_graph(orch, spec, limits)
    if meta:
        snapshot = await compiled.aget_state(run_config(thread_id))
        if snapshot.interrupts:
            raise UserError(
                f"thread {thread_id!r} is waiting at a gate; answer it with "
                "resume, or start the new run on another thread"
            )
        if run_status.unfinished(snapshot) and not model_failed_here(meta, snapshot):
            raise UserError(
                f"thread {thread_id!r} has an unfinished run (its process "
                "stopped mid-step); resume it first"
            )
    if run_input is None:  # a langgraph.json graph: its own input, as given
        return compiled, own_input(compiled, spec.name, input), {}
    payload = spec.make_input(run_input) if spec.make_input else run_input.model_dump()
    note: dict[str, str] = {}
    if scopes:
        messages = user_messages(payload, run_input)
        note = run_meta.noting(str(user_id), messages)
        if spec.uses_memory:
            payload["memories"] = await orch.user_memory.alines(scopes)
    return compiled, payload, note


def model_failed_here(meta: dict[str, str], snapshot: Any) -> bool:
    """Whether the thread's unfinished step is one the model failed, and nothing ran since.

    A new input may start over it, where a step a process left mid-way must be resumed.
    """
    failed_at = meta.get(MODEL_FAILED)
    return bool(failed_at) and failed_at == checkpoint_of(snapshot)


async def resume(
    orch: Orchestrator,
    thread_id: str,
    decision: Any,
    limits: Limits | None,
    run_id: str | None,
    decide: Callable[[GateRequest], Any] | None,
    mode: RunMode,
) -> AsyncIterator[StepEvent]:
    """The run core of `stream_resume`/`astream_resume`, on the run loop."""
    meta = await orch.run_writes.read(thread_id)
    if not meta.get("graph"):
        raise NotFoundError(f"no thread {thread_id!r}; `threads` lists the known ones")
    spec = orch.graphs.get(meta["graph"])
    async with orch.lifecycle.lock(thread_id, [orch.run_writes.read_meta(thread_id)]) as lock:
        meta = orch.run_writes.meta_of(thread_id, lock.reads[0])  # as it is under the lock
        compiled = await compiled_graph(orch, spec, limits)
        payload = await _prepare_resume(
            orch, spec, compiled, meta, thread_id, decision, decide, lock.fence
        )
        async for event in orch.run_record.execute(
            spec, compiled, thread_id, payload, None, run_id, lock, mode, meta=meta
        ):
            yield event


async def _prepare_resume(
    orch: Orchestrator,
    spec: GraphSpec,
    compiled: Graph,
    meta: dict[str, str],
    thread_id: str,
    decision: Any,
    decide: Callable[[GateRequest], Any] | None,
    fence: int | None = None,
) -> Any:
    """What resuming the thread means now: the payload to run, from one read of its state."""
    config = run_config(thread_id)
    snapshot = await compiled.aget_state(config)
    gate = gate_of(snapshot)
    if decide is not None:
        if gate is None:
            raise UserError(
                f"thread {thread_id!r} is not waiting at a gate; resume it without a decision"
            )
        decision = decide(gate)
    if gate is not None:
        if decision is None:
            raise UserError(
                f"thread {thread_id!r} is waiting at a gate; give a decision "
                "(approve, edit or reject)"
            )
        return gate_command(compiled, config, decision, orch.tools(spec.name), request=gate)
    if snapshot.interrupts:
        return Command(resume=decision)  # a user graph's own interrupt
    if run_status.unfinished(snapshot):  # nodes to run, or a step's saved writes to go on from
        if decision is not None:
            raise UserError(
                f"thread {thread_id!r} is not waiting at a gate; resume it without a decision"
            )
        return None
    # Under this run's lock no other process runs the thread: a recorded `running` died.
    status = run_status.settled(
        meta.get("status"),
        False,
        next=[],
        interrupted=False,
        stop_reason=(snapshot.values or {}).get("stop_reason"),
    )
    if status == "failed" and decision is None:
        # It stopped with nothing left to run and no stop reason (a graph's own end, or a
        # failure recorded after its last step): LangGraph finds the run had finished.
        return None
    if status != meta.get("status"):  # its process died after the last step
        await run_meta.asettled(orch.run_writes, thread_id, fence, status)
    raise UserError(
        f"thread {thread_id!r} has already finished ({status}); there is "
        "nothing to resume; start a new run with invoke"
    )
