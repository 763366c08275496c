"""Executing one HTTP run, in a worker or the API process.

Take the thread's lock, pick the run up if it is its turn, stream its graph with LangGraph's stream
modes, publish every event to the run's Redis stream, and record how it ended.

Between chunks the executor checks the run's record: a cancel asked for (`interrupt` or
`rollback`) stops it; another owner (the run was taken over while this process was
frozen) makes it stop without writing anything more.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import uuid
from collections.abc import Iterable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any, Literal

import redis
from langchain_core.runnables import RunnableConfig

from graphwright import run_status
from graphwright.checkpoints.errors import LockLostError
from graphwright.checkpoints.last_saved import LastSaved
from graphwright.graphs.registry import Graph, GraphSpec
from graphwright.locking import ThreadBusyError, ThreadLock
from graphwright.orchestrator import Orchestrator
from graphwright.run_context import Run
from graphwright.run_record import end_state, watch
from graphwright.server.records.run_steps import RunSteps
from graphwright.server.records.run_store import RunStore
from graphwright.server.runs._completion import after_run, drop_temporary_thread
from graphwright.server.runs._producing import produce
from graphwright.server.runs._pump import Pump
from graphwright.server.runs._start_payload import StartPayload
from graphwright.server.runs.framing import Framer, error_data
from graphwright.server.runs.payloads import run_config, run_context
from graphwright.server.runs.values import values_of
from graphwright.server.schemas.run_bodies import RunCreate, RunStatus
from graphwright.tools.runloop import call, hand
from graphwright_errors import InfrastructureError

log = logging.getLogger(__name__)
Outcome = Literal["done", "busy", "wait", "gone"]
SIGNAL_POLL_S = 0.25  # how often a run inside a long node looks for a cancel


class Lost(Exception):
    """Another executor owns the run now; this one stops writing."""


@dataclass
class Prepared:
    """A picked-up run, ready to stream: what `Executor.prepare` found and made."""

    run: Run
    body: RunCreate
    payload: Any
    meta: dict[str, str]  # the thread's meta, read under the run's lock
    raw: dict[str, str]  # the run's record as it was picked up
    noted: bool  # its start noted the user's messages to remember at its end


class Executor(StartPayload):
    """Runs HTTP runs for one process (`owner` tells its writes apart from a successor's).

    Every Redis call of a run's common path is a coroutine on the run loop (`RunSteps`, the
    lock, `RunWrites`); what may block (building a graph not built yet, a user's memories, a
    rollback, a recovered run's reads) goes to the loop's executor.
    """

    def __init__(self, orch: Orchestrator, store: RunStore, owner: str | None = None) -> None:
        self.orch = orch
        self.store = store
        self.steps = RunSteps(store, orch.aclient)
        self.owner = owner or f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"

    def run(self, thread_id: str, run_id: str) -> Outcome:
        """`arun` for a caller on a thread of its own: the run goes to the run loop."""
        return call(self.arun(thread_id, run_id), "Executor.run")

    async def arun(self, thread_id: str, run_id: str) -> Outcome:
        """Execute the run if the thread is free and it is the run's turn.

        Safe to await many at once from any loop: each run takes its own lock and fence,
        and runs on the process's run loop (awaited there, or handed to it from elsewhere).
        """
        return await hand(self._arun(thread_id, run_id))

    async def _arun(self, thread_id: str, run_id: str) -> Outcome:
        reads = [self.orch.run_writes.read_meta(thread_id)]
        async with AsyncExitStack() as stack:
            try:
                lock = await stack.enter_async_context(self.orch.lifecycle.lock(thread_id, reads))
            except ThreadBusyError:
                return "busy"  # a retry, never an error
            picked = await self.steps.pickup(thread_id, run_id, self.owner)
            if picked in ("wait", "gone"):
                return picked
            meta = self.orch.run_writes.meta_of(thread_id, lock.reads[0])
            try:
                ready = await self.prepare(thread_id, run_id, picked == "recover", lock, meta)
                if ready is not None:
                    await self.drive(ready)
            except (Lost, LockLostError):
                log.warning("run %s was taken over by another executor; this one stops", run_id)
            return "done"
        return "done"  # pragma: no cover  # AsyncExitStack does not swallow exceptions

    async def publish(self, thread_id: str, run_id: str, event: str, data: Any) -> str | None:
        """Publish one event; returns the cancel action asked for the run, if any."""
        published = await self.steps.publish(thread_id, run_id, self.owner, event, data)
        if published is None:
            raise Lost(run_id)
        return published[1]

    async def drive(self, ready: Prepared) -> None:
        """Stream the prepared run, then record its end."""
        run = ready.run
        # Read once: where a rollback returns to, and whether there is anything to continue
        # (prepare writes no checkpoint, so this is the state before the run).
        state = await run.graph.aget_state({"configurable": {"thread_id": run.thread_id}})
        before = state.config.get("configurable", {}).get("checkpoint_id")
        with watch(run.graph, run.thread_id) as saved:
            error, cancel = await self.stream(run, ready.payload, ready.body, state)
        await self.finish(ready, error, cancel, before, saved)

    async def prepare(
        self,
        thread_id: str,
        run_id: str,
        recovering: bool,
        lock: ThreadLock,
        meta: dict[str, str],
    ) -> Prepared | None:
        """The run's graph, config and payload, its start recorded; None when it failed here."""
        raw = await self.steps.raw(thread_id, run_id)
        body = RunCreate.model_validate_json(raw["body"])
        try:  # a graph this process may not know; a factory graph: built for this config
            config = run_config(thread_id, run_id, body)
            # ours to set, never the caller's: every checkpoint, record and trace write carries it
            config["configurable"]["gw_fence"] = lock.fence
            run = await self.orch.lifecycle.aadmit(
                body.assistant_id, thread_id, run_id, config=config
            )
            run.lock = lock
        except (redis.RedisError, InfrastructureError):
            raise  # Redis away or the run lost: retried, never the run's fault
        except Exception as exc:  # the run's own: its graph, its factory or its config
            await self.fail_early(thread_id, run_id, exc, lock, meta, raw)
            return None
        await self.publish(
            thread_id, run_id, "metadata", {"run_id": run_id, "attempt": 2 if recovering else 1}
        )
        noted = self.notes(run.spec, body)
        try:
            payload = await self.payload(
                run.spec, run.graph, config, body, recovering, thread_id, run_id, raw
            )
            if noted:
                await self.recall(run.spec, thread_id, body, payload, lock.fence)
        except Exception as exc:  # a decision that no longer fits, an input the graph refuses
            await self.publish(thread_id, run_id, "error", error_data(exc))
            ready = Prepared(run=run, body=body, payload=None, meta=meta, raw=raw, noted=noted)
            await self.finish(ready, exc, None, None, None)  # no rollback: no before
            return None
        # fenced: no write of a stale run lands
        await self.orch.lifecycle.astart(run, body.input, was=meta.get("status"))
        return Prepared(run=run, body=body, payload=payload, meta=meta, raw=raw, noted=noted)

    async def fail_early(
        self,
        thread_id: str,
        run_id: str,
        exc: Exception,
        lock: ThreadLock,
        meta: dict[str, str],
        raw: dict[str, str],
    ) -> None:
        """End a run that failed before its graph existed.

        `error` with the reason, once (FINISH is owner-checked), and its thread given back for the
        next run.
        """
        log.warning("run %s on thread %s failed before it started: %s", run_id, thread_id, exc)
        await self.publish(thread_id, run_id, "error", error_data(exc))
        await self.orch.lifecycle.afailed(thread_id, lock.fence)
        await self.close(thread_id, run_id, "error", json.dumps(error_data(exc)), lock, meta, raw)
        await after_run(self.orch, self.steps, thread_id, run_id, raw)

    async def close(
        self,
        thread_id: str,
        run_id: str,
        status: RunStatus,
        message: str,
        lock: ThreadLock,
        meta: dict[str, str],
        raw: dict[str, str],
        *,
        delete: bool = False,
    ) -> None:
        """The owner-checked FINISH, which gives the lock back; Lost if the run is not ours.

        A stateless run's thread is gone before its waiters wake; a thread with a TTL has the keys
        this run added expire with it, before its end is seen.
        """
        if raw.get("stateless") == "delete":
            await drop_temporary_thread(self.orch, self.store, thread_id, run_id)
        cap = await self.orch.lifecycle.arelease(thread_id, meta)
        lock.renewal_stop.set()  # FINISH deletes the lock: no renewal may find it gone
        if not await self.steps.finish(
            thread_id, run_id, self.owner, status, message, lock.value, cap, delete=delete
        ):
            raise Lost(run_id)

    async def stream(
        self, run: Run, payload: Any, body: RunCreate, state: Any
    ) -> tuple[BaseException | None, str | None]:
        """Stream the graph, relaying each chunk.

        `state` is the thread's before the run. Returns the graph's error or the cancel that
        stopped it.
        """
        framer = Framer(body.modes(), body.stream_subgraphs)
        options = stream_options(run.graph, body, self.orch.settings.durability)
        thread_id, run_id = run.thread_id, run.run_id
        try:
            # aget_state shows pending writes as applied (a step killed before its checkpoint
            # reads as finished), so only a waiting gate means there is nothing to continue.
            if payload is None and state.interrupts:
                return None, None
            pump = Pump(
                produce(run.graph, payload, run.config, body, framer, options, run_id),
                name=f"gw-produce-{run_id}",
            )
            try:
                if cancel := await self._relay_all(pump, run):
                    return None, cancel
            finally:
                await pump.abandon()  # however the loop ended, the producer is stopped
        except Lost:
            raise
        except LockLostError as exc:  # a fenced write was refused: a newer owner has the thread
            raise Lost(run_id) from exc
        except Exception as exc:  # the graph raised: the run ends in error, the stream says so
            log.info("run %s on thread %s raised %s", run_id, thread_id, exc)
            await self.publish(thread_id, run_id, "error", error_data(exc))
            return exc, None
        return None, None

    async def _relay_all(self, pump: Pump, run: Run) -> str | None:
        """Relay the producer's frames until it ends; the cancel that stopped it, if one did."""
        lock = run.lock
        while (item := await pump.get(SIGNAL_POLL_S)) is None or item[0] != "end":
            if item is not None and item[0] == "error":
                raise item[1]
            frames = item[1] if item is not None else ()
            owner, cancel = await self.relay(run.thread_id, run.run_id, frames)
            if owner != self.owner or (lock is not None and lock.lost.is_set()):
                raise Lost(run.run_id)
            if cancel:  # also mid-node: a long model call or tool is left behind, fenced out
                await self.abandon(pump, run)
                return cancel
        return None

    async def relay(
        self, thread_id: str, run_id: str, frames: Iterable[tuple[str, Any]]
    ) -> tuple[str | None, str | None]:
        """Publish a chunk's events.

        The run's owner and cancel signal as they are now (read by the last publish, each of which
        checks the owner, or on their own without one).
        """
        published = False
        cancel: str | None = None
        for event, data in frames:
            cancel, published = await self.publish(thread_id, run_id, event, data), True
        if published:
            return self.owner, cancel
        return await self.steps.signals(thread_id, run_id)

    async def abandon(self, pump: Pump, run: Run) -> None:
        """Leave the cancelled run's producer behind.

        Moving the fence on first refuses every write its unfinished step still makes.
        """
        if run.lock is not None:  # this executor's own writes (the run's end) carry the new token
            run.lock.fence = await self.steps.fence(run.thread_id)
        await pump.abandon()

    async def finish(
        self,
        ready: Prepared,
        error: BaseException | None,
        cancel: str | None,
        before: str | None,
        saved: LastSaved | None,
    ) -> None:
        """The run's end.

        Status, output and memories, each refused (LockLostError) once another executor took the
        thread over, before the owner-checked FINISH, which also gives the lock back; a stateless
        run's thread is gone before its waiters wake.
        """
        run, thread_id, run_id = ready.run, ready.run.thread_id, ready.run.run_id
        assert run.lock is not None  # an executor's run holds its thread's lock
        state, head = (
            (None, None) if error or cancel else await end_state(run.graph, thread_id, saved)
        )
        if state is None:
            state = await run.graph.aget_state({"configurable": {"thread_id": thread_id}})
        status, thread_status = run_status.http_end(state, error, cancel)
        if cancel == "rollback":
            await self.rollback(run.graph, thread_id, run_id, before)
        # before the run reads as ended to its waiters (its memories, then its status)
        remember = run_status.remembers(thread_status) and cancel != "rollback"
        remember = remember and (ready.noted or bool(ready.meta.get("remember")))
        await self.orch.lifecycle.afinish(run, state, thread_status, remember=remember, head=head)
        message = json.dumps(error_data(error)) if error is not None else ""
        if cancel == "rollback":  # the thread as the rollback left it
            state = await run.graph.aget_state({"configurable": {"thread_id": thread_id}})
        output = values_of(run.graph, state)
        await self.steps.update(thread_id, run_id, run.fence, output=json.dumps(output))
        await self.close(
            thread_id,
            run_id,
            status,
            message,
            run.lock,
            ready.meta,
            ready.raw,
            delete=cancel == "rollback",
        )
        if cancel == "rollback":
            return
        await after_run(self.orch, self.steps, thread_id, run_id, ready.raw)

    @staticmethod
    def notes(spec: GraphSpec, body: RunCreate) -> bool:
        """Whether the run's start notes its user's messages (`StartPayload.recall`)."""
        user = (body.metadata or {}).get("user_id")
        return user is not None and spec.make_input is not None and body.command is None

    async def rollback(self, graph: Graph, thread_id: str, run_id: str, before: str | None) -> None:
        """Put the thread back where the run started (a new head equal to that checkpoint)."""
        if before is None:  # only the run's checkpoints go: the thread and its other runs stay
            await self.orch.asaver.adelete_for_runs([run_id])
            return
        config: RunnableConfig = {"configurable": {"thread_id": thread_id, "checkpoint_id": before}}
        old = await graph.aget_state(config)
        await graph.aupdate_state(old.config, None)


def stream_options(graph: Graph, body: RunCreate, durability: str) -> dict[str, Any]:
    """LangGraph's stream options for the request.

    Durability is the settings' ("sync" unless changed) unless the request asks otherwise: a
    step's checkpoint (with the tool calls it proposed) is saved before the next step runs, as on
    the CLI path.
    """
    options: dict[str, Any] = {"subgraphs": body.stream_subgraphs, "durability": durability}
    for name in ("interrupt_before", "interrupt_after", "durability"):
        if getattr(body, name) is not None:
            options[name] = getattr(body, name)
    if body.context is not None:
        options["context"] = run_context(graph, body.context)
    return options
