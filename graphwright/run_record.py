"""One run's lifecycle and its record: the only writer of a run's status, start, end and result.

A run's data path reads API -> run -> graph -> storage: `Orchestrator.stream` takes the
thread's lock and hands the run here; `RunRecord.execute` marks it running and traces its
start (one write), drives the graph (`streaming.step_events`, on the run loop), then
`finish` takes the thread's state, read once, remembers what the user asked, counts the
usage from the trace and writes the final status, giving the lock back in the same write.
The writes are `run_meta`'s; nothing of the run goes back through the Orchestrator, and no
Redis call leaves the run loop. The HTTP service's executor starts its runs with `start`.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import StateSnapshot

from graphwright import run_meta, run_status
from graphwright.checkpoints.direct import Command
from graphwright.checkpoints.errors import LockLostError
from graphwright.checkpoints.head import Head
from graphwright.checkpoints.last_saved import LastSaved
from graphwright.checkpoints.redis_async import AsyncRedisSaver
from graphwright.checkpoints.trace import TraceWriter
from graphwright.graphs.gates import gate_of
from graphwright.graphs.registry import Graph, GraphSpec, RunInput
from graphwright.locking import ThreadLock
from graphwright.memories import Memories
from graphwright.native import answer_of
from graphwright.nodes.model_call import describe, provider_error
from graphwright.results import RunResult, StepEvent, Usage
from graphwright.run_writes import RunWrites
from graphwright.serialize import jsonable
from graphwright.streaming import RunMode, step_events
from graphwright.thread_meta import ThreadMeta
from graphwright_errors import GraphwrightError, ModelError

log = logging.getLogger(__name__)
MODEL_FAILED = run_meta.MODEL_FAILED
checkpoint_of = run_meta.checkpoint_of


def run_config(
    thread_id: str, run_id: str | None = None, fence: int | None = None
) -> RunnableConfig:
    """The LangGraph config of a thread, or of one run on it (with its lock's fence)."""
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    if fence is not None:  # every checkpoint, record and trace write of the run carries it
        config["configurable"]["gw_fence"] = fence
    if run_id:
        config["run_id"] = uuid.UUID(run_id)
        config["recursion_limit"] = 10_000  # budgets in Limits end runs, not this counter
    return config


class RunRecord:
    """Starts, drives and ends runs, writing their record in the thread's meta and trace."""

    def __init__(
        self, meta: ThreadMeta, writes: RunWrites, memories: Memories, durability: Any
    ) -> None:
        self.meta, self.writes, self.memories, self.durability = meta, writes, memories, durability
        self.tracer: TraceWriter = writes.tracer

    async def execute(
        self,
        spec: GraphSpec,
        compiled: Graph,
        thread_id: str,
        payload: Any,
        run_input: RunInput | dict[str, Any] | None,
        run_id: str | None = None,
        lock: ThreadLock | None = None,
        mode: RunMode = "steps",
        *,
        meta: dict[str, str] | None = None,
        note: dict[str, str] | None = None,
        started: str | None = None,
    ) -> AsyncIterator[StepEvent]:
        """Run the graph under the caller's lock on the run loop: its steps, then the result.

        `meta` is the thread's meta as the run read it under its lock; `note`, fields
        the start writes with it (the user's messages to remember). Every record write is
        a coroutine on the run loop: one round trip at the start, one read and one write
        (which gives the lock back) at the end. `started`: the start's entry id, when it was
        written with the lock (`start_with_lock`).
        """
        meta = meta or {}
        run_id = run_id or str(uuid.uuid4())
        fence = lock.fence if lock else None
        config = run_config(thread_id, run_id, fence)
        if started is None:
            started = await self.astart(
                spec.name, thread_id, run_id, run_input, fence, note, was=meta.get("status")
            )
        since = started if run_input is not None else meta.get("trace_from") or "-"
        error, model_failed = None, False
        with watch(compiled, thread_id) as saved:
            try:
                # "sync": a step's checkpoint (with the calls it proposed) is saved before the
                # next step starts, so no tool runs for calls a crash could make the model
                # re-plan.
                async for event in step_events(
                    compiled,
                    payload,
                    config,
                    thread_id,
                    run_id,
                    mode,
                    durability=self.durability,
                    check=lock.check if lock is not None else None,
                ):
                    yield event
            except LockLostError:
                raise  # the thread belongs to a newer run now: nothing of it is ours to write
            except Exception as exc:
                error = model_failure(exc)
                model_failed = error is not None
                if error is not None:  # a documented outcome, one line: no traceback
                    log.warning("run %s on thread %s failed: %s", run_id, thread_id, error)
                elif isinstance(exc, GraphwrightError):
                    await run_meta.afailed(self.writes, thread_id, fence)
                    raise
                else:  # a tool or graph failure: the run fails, resumable
                    log.exception("run %s on thread %s failed", run_id, thread_id)
                    error = f"{type(exc).__name__}: {exc}"
        remembers = bool((note or meta).get("user_id") and (note or meta).get("remember"))
        # A run that raised reads its state: LangGraph may still save a cancelled sibling's
        # error as its loop exits, after the run raised, which `saved` would not hold.
        snapshot, head = (None, None) if error else await end_state(compiled, thread_id, saved)
        tail = None
        if snapshot is None and not remembers:  # the state and the trace at once: one wait
            snapshot, tail = await asyncio.gather(
                compiled.aget_state(run_config(thread_id)), self.writes.tail(thread_id, since)
            )
        elif snapshot is None:  # the trace is read after the remember step has added to it
            snapshot = await compiled.aget_state(run_config(thread_id))
        result = await self.finish(
            spec,
            snapshot,
            thread_id,
            run_id,
            error,
            lock,
            model_failed,
            since,
            remembers,
            tail,
            head=head,
        )
        if meta.get("ttl_s"):  # keys the run added expire with the rest
            await self.writes.refresh_ttl(thread_id, int(float(meta["ttl_s"])))
        yield StepEvent(thread_id=thread_id, kind="result", result=result)

    async def astart(
        self,
        graph: str,
        thread_id: str,
        run_id: str,
        run_input: RunInput | dict[str, Any] | None,
        fence: int | None = None,
        note: dict[str, str] | None = None,
        *,
        was: str | None = None,
    ) -> str:
        """`start` on the run loop, in one fenced write; returns where the usage counts from.

        `note`: the user's messages to remember (`run_meta.noting`), written with it; `was`:
        the status its lock found.
        """
        return await run_meta.astarted(
            self.writes,
            thread_id,
            fence,
            graph,
            start_event(run_id, graph, run_input),
            counts=run_input is not None,  # usage counts from here, across later resumes
            note=note,
            was=was,
        )

    def start_with_lock(
        self,
        graph: str,
        thread_id: str,
        run_id: str,
        run_input: RunInput | dict[str, Any],
        owner_id: str,
        note: dict[str, str] | None = None,
    ) -> Command:
        """`astart`'s write of a run on a new thread, to send with its lock (`owner_id`'s)."""
        start = start_event(run_id, graph, run_input)
        return run_meta.started_with_lock(self.writes, thread_id, owner_id, graph, start, note=note)

    async def finish(
        self,
        spec: GraphSpec,
        snapshot: StateSnapshot,
        thread_id: str,
        run_id: str,
        error: str | None,
        lock: ThreadLock | None = None,
        model_failed: bool = False,
        since: str = "-",
        remembers: bool = False,
        tail: tuple[list[dict[str, Any]], Head | None] | None = None,
        *,
        head: Head | None = None,
    ) -> RunResult:
        """The run's result from one read of the thread's state.

        Its status written last, with the lock given back in the same write. `tail`: the
        trace since `since` and the thread's head, read already; `head`: the head known
        without a read (`end_state`): the trace is then read in the end write's round trip.
        """
        fence = lock.fence if lock else None
        status, error = run_status.ended(snapshot, error)
        if remembers and run_status.remembers(status):
            # A model call (the extraction): its usage counts below.
            await self.memories.aremember(thread_id, run_id, fence)
        reads = [self.writes.read_events(thread_id, since)] if tail is None and head else []
        if not reads:
            events, head = tail or await self.writes.tail(thread_id, since)
        gate = gate_of(snapshot)
        replies = await run_meta.aended(
            self.writes,
            thread_id,
            status,
            snapshot,
            head,
            lock=lock,
            gate=gate,
            model_failed=model_failed,
            reads=reads,
        )
        if reads:
            events = self.writes.events_of(thread_id, replies[0])
        values = snapshot.values if isinstance(snapshot.values, dict) else {}
        return RunResult(
            thread_id=thread_id,
            graph=spec.name,
            run_id=run_id,
            status=status,
            answer=answer_of(snapshot.values),
            stop_reason=values.get("stop_reason"),
            pending=gate if status == "interrupted" else None,
            steps=int((snapshot.metadata or {}).get("step", 0)),
            usage=usage_of(events),
            error=error,
        )


def watch(compiled: Graph, thread_id: str) -> AbstractContextManager[LastSaved | None]:
    """Keep what the run's saver writes at the thread's root (`AsyncRedisSaver.watch`)."""
    saver = compiled.checkpointer
    return saver.watch(thread_id) if isinstance(saver, AsyncRedisSaver) else nullcontext()


async def end_state(
    compiled: Graph, thread_id: str, saved: LastSaved | None
) -> tuple[StateSnapshot | None, Head | None]:
    """The thread's state and head after the run, from what its saver wrote: no read.

    `(None, None)` when that is not known (nothing saved, a write failed): read it then.
    Built by the graph from the saved tuple as `aget_state` builds it from the one it reads.
    """
    saver = compiled.checkpointer
    prepare = getattr(compiled, "_aprepare_state_snapshot", None)
    if saved is None or prepare is None or not isinstance(saver, AsyncRedisSaver):
        return None, None
    found = saved.tuple(saver.ctx)
    if found is None:
        return None, None
    # The config is read only when nothing is saved (not here): the tuple's own is used.
    snapshot = await prepare(run_config(thread_id), found, saver=saver, recurse=False, live=True)
    return snapshot, saved.head()


def model_failure(exc: BaseException) -> str | None:
    """The one line a run that the model provider failed ends with; None for any other error.

    A `ModelError` says it already; a provider error raised by a node that calls the
    model itself (a langgraph.json graph, a structured reply) is described the same way.
    """
    if isinstance(exc, ModelError):
        return str(exc)
    if provider_error(exc) is not None:
        return f"the model call failed: {describe(exc)}"
    return None


def usage_of(events: list[dict[str, Any]]) -> Usage:
    """Tokens, model calls and tool calls of the trace events since the run's input."""
    return Usage(
        tokens=sum(int(e.get("total_tokens") or 0) for e in events if e["kind"] == "model_call"),
        model_calls=sum(e["kind"] == "model_call" for e in events),
        tool_calls=sum(e["kind"] == "tool_call" for e in events),
        tokens_estimated=any(e.get("usage_estimated") for e in events if e["kind"] == "model_call"),
    )


def start_event(
    run_id: str, graph: str, run_input: RunInput | dict[str, Any] | None
) -> dict[str, Any]:
    """The fields of a run's `run_start` trace event (no input: it resumes)."""
    return {
        "run_id": run_id,
        "graph": graph,
        "input": run_input.model_dump() if isinstance(run_input, RunInput) else jsonable(run_input),
        "resumed": run_input is None,
    }
