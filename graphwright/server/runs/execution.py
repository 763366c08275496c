"""Executing one HTTP run, in a worker or the API process.

Take the thread's lock, pick the run up if it is its turn, stream its graph with LangGraph's stream
modes, publish every event to the run's Redis stream, and record how it ended.

Between chunks the executor checks the run's record: a cancel asked for (`interrupt` or
`rollback`) stops it; another owner (the run was taken over while this process was
frozen) makes it stop without writing anything more.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import uuid
from collections.abc import Iterable
from contextlib import AsyncExitStack
from typing import Any, Literal

import redis

from graphwright import run_status
from graphwright.checkpoints.errors import LockLostError
from graphwright.graphs.registry import Graph, GraphSpec
from graphwright.locking import ThreadBusyError, ThreadLock
from graphwright.orchestrator import Orchestrator
from graphwright.run_context import Run
from graphwright.server.records.run_store import RunStore
from graphwright.server.runs._completion import after_run, drop_temporary_thread
from graphwright.server.runs._producing import produce
from graphwright.server.runs._pump import Pump
from graphwright.server.runs._start_payload import StartPayload
from graphwright.server.runs.framing import Framer, error_data
from graphwright.server.runs.payloads import run_config, run_context
from graphwright.server.runs.values import final_values, values_of
from graphwright.server.schemas.run_bodies import RunCreate, RunStatus
from graphwright.tools.runloop import call, hand
from graphwright_errors import InfrastructureError

log = logging.getLogger(__name__)
Outcome = Literal["done", "busy", "wait", "gone"]
SIGNAL_POLL_S = 0.25  # how often a run inside a long node looks for a cancel


class Lost(Exception):
    """Another executor owns the run now; this one stops writing."""


class Executor(StartPayload):
    """Runs HTTP runs for one process (`owner` tells its writes apart from a successor's)."""

    def __init__(self, orch: Orchestrator, store: RunStore, owner: str | None = None) -> None:
        self.orch = orch
        self.store = store
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
        async with AsyncExitStack() as stack:
            try:
                lock = await stack.enter_async_context(self.orch.lifecycle.lock(thread_id))
            except ThreadBusyError:
                return "busy"  # a retry, never an error
            picked = await asyncio.to_thread(self.store.pickup, thread_id, run_id, self.owner)
            if picked in ("wait", "gone"):
                return picked
            try:
                await self.drive(thread_id, run_id, recovering=picked == "recover", lock=lock)
            except (Lost, LockLostError):
                log.warning("run %s was taken over by another executor; this one stops", run_id)
            return "done"
        return "done"  # pragma: no cover  # AsyncExitStack does not swallow exceptions

    def publish(self, thread_id: str, run_id: str, event: str, data: Any) -> str | None:
        """Publish one event; returns the cancel action asked for the run, if any."""
        published = self.store.publish(thread_id, run_id, self.owner, event, data)
        if published is None:
            raise Lost(run_id)
        return published[1]

    async def drive(
        self, thread_id: str, run_id: str, *, recovering: bool, lock: ThreadLock | None = None
    ) -> None:
        """Prepare (blocking reads, in the loop's executor), stream on the loop, record the end."""
        started = await asyncio.to_thread(self.prepare, thread_id, run_id, recovering, lock)
        if started is None:
            return
        spec, graph, config, body, payload = started
        # Read once, on the loop: where a rollback returns to, and whether there is anything
        # to continue (prepare writes no checkpoint, so this is the state before the run).
        state = await graph.aget_state({"configurable": {"thread_id": thread_id}})
        before = state.config.get("configurable", {}).get("checkpoint_id")
        error, cancel = await self.stream(
            graph, payload, config, body, thread_id, run_id, lock, state
        )
        await asyncio.to_thread(
            self.finish, spec, graph, thread_id, run_id, error, cancel, before, lock
        )

    def prepare(
        self,
        thread_id: str,
        run_id: str,
        recovering: bool,
        lock: ThreadLock | None,
    ) -> tuple[GraphSpec, Graph, Any, RunCreate, Any] | None:
        """The run's graph, config and payload, its start recorded; None when it failed here."""
        body = self.store.body(thread_id, run_id)
        try:  # a graph this process may not know; a factory graph: built for this config
            config = run_config(thread_id, run_id, body)
            config["configurable"].pop("gw_fence", None)  # ours to set, never the caller's
            if lock is not None:  # every checkpoint, record and trace write of the run carries it
                config["configurable"]["gw_fence"] = lock.fence
            run = self.orch.lifecycle.admit(body.assistant_id, thread_id, run_id, config=config)
            run.lock, spec, graph = lock, run.spec, run.graph
        except (redis.RedisError, InfrastructureError):
            raise  # Redis away or the run lost: retried, never the run's fault
        except Exception as exc:  # the run's own: its graph, its factory or its config
            self.fail_early(thread_id, run_id, exc, lock)
            return None
        self.publish(
            thread_id, run_id, "metadata", {"run_id": run_id, "attempt": 2 if recovering else 1}
        )
        try:
            payload = self.payload(spec, graph, config, body, recovering, thread_id, run_id)
        except Exception as exc:  # a decision that no longer fits, an input the graph refuses
            self.publish(thread_id, run_id, "error", error_data(exc))
            self.finish(
                spec, graph, thread_id, run_id, exc, None, None, lock
            )  # no rollback: no before
            return None
        self.orch.lifecycle.start(run, body.input)  # fenced: no write of a stale run lands
        return spec, graph, config, body, payload

    def fail_early(
        self, thread_id: str, run_id: str, exc: Exception, lock: ThreadLock | None
    ) -> None:
        """End a run that failed before its graph existed.

        `error` with the reason, once (FINISH is owner-checked), and its thread given back for the
        next run.
        """
        log.warning("run %s on thread %s failed before it started: %s", run_id, thread_id, exc)
        self.publish(thread_id, run_id, "error", error_data(exc))
        self.orch.lifecycle.failed(None, thread_id, lock.fence if lock is not None else None)
        self.close(thread_id, run_id, "error", json.dumps(error_data(exc)), lock)
        after_run(self.orch, self.store, thread_id, run_id)

    def close(
        self,
        thread_id: str,
        run_id: str,
        status: RunStatus,
        message: str,
        lock: ThreadLock | None,
        *,
        delete: bool = False,
    ) -> None:
        """The owner-checked FINISH, which gives the lock back; Lost if the run is not ours.

        A stateless run's thread is gone before its waiters wake; a thread with a TTL has the keys
        this run added expire with it, before its end is seen.
        """
        if self.store.raw(thread_id, run_id).get("stateless") == "delete":
            drop_temporary_thread(self.orch, self.store, thread_id, run_id)
        cap = self.orch.lifecycle.release(thread_id)
        if lock is not None:
            lock.renewal_stop.set()  # FINISH deletes the lock: no renewal may find it gone
        owner_value = lock.value if lock is not None else ""
        if not self.store.finish(
            thread_id, run_id, self.owner, status, message, owner_value, cap, delete=delete
        ):
            raise Lost(run_id)

    async def stream(
        self,
        graph: Graph,
        payload: Any,
        config: Any,
        body: RunCreate,
        thread_id: str,
        run_id: str,
        lock: ThreadLock | None = None,
        state: Any = None,
    ) -> tuple[BaseException | None, str | None]:
        """Stream the graph, relaying each chunk.

        `state` is the thread's before the run, if the caller has it. Returns the graph's error or
        the cancel that stopped it.
        """
        framer = Framer(body.modes(), body.stream_subgraphs)
        options = stream_options(graph, body, self.orch.settings.durability)
        try:
            if state is None:
                state = await graph.aget_state({"configurable": {"thread_id": thread_id}})
            # aget_state shows pending writes as applied (a step killed before its checkpoint
            # reads as finished), so only a waiting gate means there is nothing to continue.
            if payload is None and state.interrupts:
                return None, None
            pump = Pump(
                produce(graph, payload, config, body, framer, options, run_id),
                name=f"gw-produce-{run_id}",
            )
            try:
                if cancel := await self._relay_all(pump, thread_id, run_id, lock):
                    return None, cancel
            finally:
                await pump.abandon()  # however the loop ended, the producer is stopped
        except Lost:
            raise
        except LockLostError as exc:  # a fenced write was refused: a newer owner has the thread
            raise Lost(run_id) from exc
        except Exception as exc:  # the graph raised: the run ends in error, the stream says so
            log.info("run %s on thread %s raised %s", run_id, thread_id, exc)
            await asyncio.to_thread(self.publish, thread_id, run_id, "error", error_data(exc))
            return exc, None
        return None, None

    async def _relay_all(
        self, pump: Pump, thread_id: str, run_id: str, lock: ThreadLock | None
    ) -> str | None:
        """Relay the producer's frames until it ends; the cancel that stopped it, if one did."""
        while (item := await pump.get(SIGNAL_POLL_S)) is None or item[0] != "end":
            if item is not None and item[0] == "error":
                raise item[1]
            frames = item[1] if item is not None else ()
            # One hop off the loop per chunk: its events, then the run's signals.
            owner, cancel = await asyncio.to_thread(self.relay, thread_id, run_id, frames)
            if owner != self.owner or (lock is not None and lock.lost.is_set()):
                raise Lost(run_id)
            if cancel:  # also mid-node: a long model call or tool is left behind, fenced out
                await self.abandon(pump, thread_id, lock)
                return cancel
        return None

    def relay(
        self,
        thread_id: str,
        run_id: str,
        frames: Iterable[tuple[str, Any]],
    ) -> tuple[str | None, str | None]:
        """Publish a chunk's events.

        The run's owner and cancel signal as they are now (read by the last publish, each of which
        checks the owner, or on their own without one).
        """
        published = False
        cancel: str | None = None
        for event, data in frames:
            cancel, published = self.publish(thread_id, run_id, event, data), True
        if published:
            return self.owner, cancel
        return self.store.signals(thread_id, run_id)

    async def abandon(self, pump: Pump, thread_id: str, lock: ThreadLock | None) -> None:
        """Leave the cancelled run's producer behind.

        Moving the fence on first refuses every write its unfinished step still makes.
        """
        if lock is not None:  # this executor's own writes (the run's end) carry the new token
            lock.fence = int(
                await asyncio.to_thread(self.orch.client.incr, self.orch.keys.fence(thread_id))
            )
        await pump.abandon()

    def finish(
        self,
        spec: GraphSpec,
        graph: Graph,
        thread_id: str,
        run_id: str,
        error: BaseException | None,
        cancel: str | None,
        before: str | None,
        lock: ThreadLock | None = None,
    ) -> None:
        """The run's end.

        Status, output and memories, each refused (LockLostError) once another executor took the
        thread over, before the owner-checked FINISH, which also gives the lock back; a stateless
        run's thread is gone before its waiters wake.
        """
        fence = lock.fence if lock is not None else None  # moved on by a cancel
        run = Run(thread_id=thread_id, run_id=run_id, spec=spec, graph=graph, config={}, lock=lock)
        state = graph.get_state({"configurable": {"thread_id": thread_id}})
        status, thread_status = run_status.http_end(state, error, cancel)
        if cancel == "rollback":
            self.rollback(graph, thread_id, run_id, before)
        # before the run reads as ended to its waiters (its memories, then its status)
        remember = run_status.remembers(thread_status) and cancel != "rollback"
        self.orch.lifecycle.finish(run, state, thread_status, remember=remember)
        message = json.dumps(error_data(error)) if error is not None else ""
        output = (
            final_values(self.orch, thread_id) if cancel == "rollback" else values_of(graph, state)
        )
        self.store.update(thread_id, run_id, fence, output=json.dumps(output))
        self.close(thread_id, run_id, status, message, lock, delete=cancel == "rollback")
        if cancel == "rollback":
            return
        after_run(self.orch, self.store, thread_id, run_id)

    def rollback(self, graph: Graph, thread_id: str, run_id: str, before: str | None) -> None:
        """Put the thread back where the run started (a new head equal to that checkpoint)."""
        if before is None:  # only the run's checkpoints go: the thread and its other runs stay
            self.orch.saver.delete_for_runs([run_id])
            return
        old = graph.get_state({"configurable": {"thread_id": thread_id, "checkpoint_id": before}})
        graph.update_state(old.config, None)


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
