"""One run's typed context and the lifecycle steps every entry point takes with it.

The Python API and CLI (`run_core`, `RunRecord`) and the HTTP service (the worker's
and the API process's executor) admit a run, lock its thread, start, stream, finish and
release it through `Lifecycle`: the public face of the Orchestrator's parts a run
needs, so no module reaches into the Orchestrator's private members. Streaming stays
with each face (steps for the API, SSE frames for HTTP); the records a run leaves are
written by `run_meta`, its statuses mapped by `run_status`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import StateSnapshot

from graphwright import run_meta
from graphwright.aconnect import loop_portable
from graphwright.checkpoints.direct import Command
from graphwright.checkpoints.head import Head
from graphwright.graphs.gates import gate_of
from graphwright.graphs.registry import Graph, GraphSpec
from graphwright.locking import ThreadLock, athread_lock
from graphwright.nodes.deps import Limits
from graphwright.results import ThreadStatus
from graphwright.run_record import run_config
from graphwright.tools.runloop import on_run_loop

if TYPE_CHECKING:
    from graphwright.orchestrator import Orchestrator


@dataclass(kw_only=True)
class Run:
    """What a run is, once admitted.

    Its thread and id, its graph built for its config and limits, the user it recalls memories for,
    and (once taken) its thread's lock.
    """

    thread_id: str
    run_id: str
    spec: GraphSpec
    graph: Graph
    config: RunnableConfig
    limits: Limits | None = None
    user_id: str | None = None
    lock: ThreadLock | None = None

    @property
    def fence(self) -> int | None:
        """The lock's fencing token, read live: a cancel moves it on (`Executor.abandon`)."""
        return self.lock.fence if self.lock is not None else None


class Lifecycle:
    """The steps of a run on one Orchestrator: admit, lock, start, finish, release."""

    def __init__(self, orch: Orchestrator) -> None:
        self.orch = orch

    async def aadmit(
        self,
        graph: str,
        thread_id: str,
        run_id: str,
        *,
        config: RunnableConfig | None = None,
        limits: Limits | None = None,
        user_id: str | None = None,
    ) -> Run:
        """The run's graph, built for its config and limits (one not built yet: in the executor).

        Raises the run's own error (an unknown graph, a factory that raises, a bad config): the
        caller ends it so.
        """
        spec = self.orch.graphs.get(graph)
        config = config if config is not None else run_config(thread_id, run_id)
        built = self.orch.cached_graph(spec, limits, config)
        if built is None:  # a builder or a factory may block
            built = await asyncio.to_thread(self.orch.graph_for, spec, limits, config)
        return Run(
            thread_id=thread_id,
            run_id=run_id,
            spec=spec,
            graph=built,
            config=config,
            limits=limits,
            user_id=user_id,
        )

    @asynccontextmanager
    async def lock(
        self, thread_id: str, reads: Sequence[Command] = (), *, owner_id: str | None = None
    ) -> AsyncIterator[ThreadLock]:
        """Hold the thread's lock (renewed) for the run; given back however it ends.

        `reads` (commands) come back with it, in `ThreadLock.reads` (`owner_id`: see
        `locking.athread_lock`). It is taken, renewed (a task)
        and given back through the run core's asyncio client, on the loop the run goes on: the run
        loop, or the caller's own where that client serves every loop (`aconnect.LoopPools`); a
        client of one loop only (a cluster's, a Sentinel master's) has its runs handed to the run
        loop (`tools.runloop.hand`).
        """
        orch = self.orch
        if not on_run_loop() and not loop_portable(orch.aclient):
            raise RuntimeError("a run's lock is taken on the run loop (tools.runloop.hand)")
        async with athread_lock(
            orch.aclient,
            orch.keys,
            thread_id,
            ttl_s=orch.settings.lock_ttl_s,
            reads=reads,
            owner_id=owner_id,
        ) as lock:
            yield lock

    async def astart(self, run: Run, run_input: Any, *, was: str | None = None) -> None:
        """Mark the thread running and trace the run's start (`None`: it resumes), in one write.

        `was`: the thread's status its lock found.
        """
        record = self.orch.run_record
        await record.astart(run.spec.name, run.thread_id, run.run_id, run_input, run.fence, was=was)

    async def afailed(self, thread_id: str, fence: int | None) -> None:
        """The run ended before its graph ran (or with our own error)."""
        await run_meta.afailed(self.orch.run_writes, thread_id, fence)

    async def afinish(
        self,
        run: Run,
        snapshot: StateSnapshot,
        status: ThreadStatus,
        *,
        remember: bool,
        head: Head | None = None,
    ) -> None:
        """Remember what the user asked (a run that ended well: a model call).

        Then write its end and the `show` summary of the state it left, as every run does
        (`head`: the thread's head, when the run's saver knows it; else read here). The lock
        stays held: the caller gives it back.
        """
        if remember:
            await self.orch.user_memory.aremember(run.thread_id, run.run_id, run.fence)
        if head is None:
            head = await self.orch.run_writes.head(run.thread_id)
        await run_meta.aended(
            self.orch.run_writes,
            run.thread_id,
            status,
            snapshot,
            head,
            lock=run.lock,
            gate=gate_of(snapshot),
            release=False,
        )

    async def arelease(self, thread_id: str, meta: dict[str, str]) -> int | None:
        """The keys the run added expire with its thread (its `meta` names a TTL): its length."""
        if not meta.get("ttl_s"):
            return None
        seconds = int(float(meta["ttl_s"]))
        await self.orch.run_writes.refresh_ttl(thread_id, seconds)
        return seconds
