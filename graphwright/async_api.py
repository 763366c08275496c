"""The Orchestrator's asyncio twins.

Runs and checkpoint reads are native, the other inspections run in a worker thread.

A mixin, so `Orchestrator` keeps one public surface. The run twins await the async run
core on the process's run loop (`graphwright.tools.runloop`), as the sync calls do from their
thread; `astate` and `ahistory` read checkpoints with the async saver there; the other
read-only views (thread meta, trace, listing) hand their blocking call to `asyncio.to_thread`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar, cast

from graphwright import drawing, run_core
from graphwright.aconnect import loop_portable
from graphwright.graphs.registry import RunInput
from graphwright.nodes.deps import Limits
from graphwright.results import CheckpointInfo, RunResult, StepEvent, ThreadInfo, ThreadState
from graphwright.streaming import StreamMode, alast_result
from graphwright.tools.runloop import aiterate, hand, size_executor

if TYPE_CHECKING:
    from graphwright.orchestrator import Orchestrator

T = TypeVar("T")


class AsyncTwins:
    """`a`-prefixed twins of the Orchestrator's blocking methods."""

    @property
    def _blocking(self) -> Orchestrator:
        return cast("Orchestrator", self)  # only ever mixed into Orchestrator

    async def ainvoke(
        self,
        graph: str,
        input: str | dict[str, Any] | RunInput,
        *,
        thread_id: str | None = None,
        limits: Limits | None = None,
        run_id: str | None = None,
        user_id: str | None = None,
    ) -> RunResult:
        """`invoke` for asyncio: the run goes on the caller's loop, as LangGraph's `ainvoke` does.

        (On the run loop instead, awaited from here, where the Redis client serves one loop only:
        a cluster or a Sentinel master.)
        """
        orch = self._blocking
        return await self._here(
            alast_result(
                run_core.start(orch, graph, input, thread_id, limits, run_id, user_id, "result")
            )
        )

    async def aresume(
        self,
        thread_id: str,
        decision: Any = None,
        *,
        limits: Limits | None = None,
        run_id: str | None = None,
    ) -> RunResult:
        """`resume` for asyncio."""
        orch = self._blocking
        return await self._here(
            alast_result(run_core.resume(orch, thread_id, decision, limits, run_id, None, "result"))
        )

    async def astream(
        self,
        graph: str,
        input: str | dict[str, Any] | RunInput,
        *,
        thread_id: str | None = None,
        limits: Limits | None = None,
        run_id: str | None = None,
        user_id: str | None = None,
        mode: StreamMode = "steps",
    ) -> AsyncIterator[StepEvent]:
        """`stream` for asyncio: the same run core, no thread of its own."""
        orch = self._blocking
        async for event in aiterate(
            lambda: run_core.start(orch, graph, input, thread_id, limits, run_id, user_id, mode),
            here=self._runs_here(),
        ):
            yield event

    async def astream_resume(
        self,
        thread_id: str,
        decision: Any = None,
        *,
        limits: Limits | None = None,
        run_id: str | None = None,
        mode: StreamMode = "steps",
    ) -> AsyncIterator[StepEvent]:
        """`stream_resume` for asyncio."""
        orch = self._blocking
        async for event in aiterate(
            lambda: run_core.resume(orch, thread_id, decision, limits, run_id, None, mode),
            here=self._runs_here(),
        ):
            yield event

    async def astate(self, thread_id: str) -> ThreadState:
        """`state`: its checkpoint read by the async saver."""
        return await self._here(self._blocking._astate(thread_id))

    async def ahistory(self, thread_id: str) -> list[CheckpointInfo]:
        """`history`: the checkpoints read by the async saver."""
        return await self._here(self._blocking._ahistory(thread_id))

    def _runs_here(self) -> bool:
        """Whether a run goes on the caller's loop: the run core's client serves every loop.

        Its sync nodes then run in that loop's default executor, as LangGraph runs them; a loop
        that has none yet gets one of the run loop's size (`runloop.size_executor`).
        """
        if not loop_portable(self._blocking.aclient):
            return False
        size_executor(asyncio.get_running_loop())
        return True

    async def _here(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await `coro` on the caller's loop where it may run there, else on the run loop."""
        return await coro if self._runs_here() else await hand(coro)

    async def atrace(self, thread_id: str) -> list[dict[str, Any]]:
        return await asyncio.to_thread(self._blocking.trace, thread_id)

    async def athreads(self) -> list[ThreadInfo]:
        return await asyncio.to_thread(self._blocking.threads)

    async def adelete(self, thread_id: str) -> None:
        await asyncio.to_thread(self._blocking.delete, thread_id)

    async def adraw(
        self, graph: str, format: drawing.Format = "mermaid", thread_id: str | None = None
    ) -> str:
        return await asyncio.to_thread(self._blocking.draw, graph, format, thread_id)
