"""Reading a thread without running it: its state, checkpoints, trace, listing and drawing.

A mixin of `Orchestrator` (one public surface); nothing here writes.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, cast

from graphwright import drawing
from graphwright.graphs.gates import gate_of
from graphwright.results import CheckpointInfo, ThreadInfo, ThreadState, ThreadSummary
from graphwright.serialize import jsonable
from graphwright_errors import NotFoundError

if TYPE_CHECKING:
    from graphwright.orchestrator import Orchestrator


def history_of(snapshots: list[Any]) -> list[CheckpointInfo]:
    """`CheckpointInfo` of each snapshot, newest first.

    The nodes that produced each are read off the one before.
    """
    out = []
    for i, snap in enumerate(snapshots):
        older = snapshots[i + 1] if i + 1 < len(snapshots) else None
        meta = snap.metadata or {}
        out.append(
            CheckpointInfo(
                checkpoint_id=str((snap.config.get("configurable") or {}).get("checkpoint_id")),
                step=int(meta.get("step", -1)),
                node=list(older.next) if older else [],
                next=list(snap.next),
                source=meta.get("source"),
                created_at=snap.created_at,
            )
        )
    return out


class Inspection:
    """The Orchestrator's read-only views of threads and graphs."""

    @property
    def _api(self) -> Orchestrator:
        return cast("Orchestrator", self)  # only ever mixed into Orchestrator

    def state(self, thread_id: str) -> ThreadState:
        spec, compiled, config = self._api._thread(thread_id)
        return self._state_of(thread_id, spec.name, compiled.get_state(config))

    async def _astate(self, thread_id: str) -> ThreadState:
        """`state` on the run loop: the checkpoint read natively, the meta off the loop."""
        spec, compiled, config = await asyncio.to_thread(self._api._thread, thread_id)
        snapshot = await compiled.aget_state(config)
        return await asyncio.to_thread(self._state_of, thread_id, spec.name, snapshot)

    def _state_of(self, thread_id: str, graph: str, snapshot: Any) -> ThreadState:
        return ThreadState(
            thread_id=thread_id,
            graph=graph,
            status=self._api.thread_meta.status(self._api._meta(thread_id), snapshot),
            values=jsonable(snapshot.values),
            next=list(snapshot.next),
            pending=gate_of(snapshot),  # the same snapshot: one read, not two
            checkpoint_id=(snapshot.config.get("configurable") or {}).get("checkpoint_id"),
        )

    def summary(self, thread_id: str) -> ThreadSummary:
        """What `graphwright show` prints.

        `state` without the values, but for the answer and stop reason (`graphwright.reader` reads
        it without the graph when recorded).
        """
        state = self.state(thread_id)
        return ThreadSummary(
            thread_id=thread_id,
            graph=state.graph,
            status=state.status,
            next=state.next,
            stop_reason=state.values.get("stop_reason"),
            answer=state.values.get("answer"),
            pending=state.pending,
            checkpoint_id=state.checkpoint_id,
        )

    def history(self, thread_id: str) -> list[CheckpointInfo]:
        """Checkpoints, newest first, each with the node(s) that produced it and its step."""
        _, compiled, config = self._api._thread(thread_id)
        return history_of(list(compiled.get_state_history(config)))

    async def _ahistory(self, thread_id: str) -> list[CheckpointInfo]:
        _, compiled, config = await asyncio.to_thread(self._api._thread, thread_id)
        return history_of([snap async for snap in compiled.aget_state_history(config)])

    def snapshots(self, thread_id: str, limit: int | None = None) -> list[Any]:
        """LangGraph's own `StateSnapshot` objects, newest first (the HTTP service's history)."""
        _, compiled, config = self._api._thread(thread_id)
        return list(compiled.get_state_history(config, limit=limit))

    def snapshot(self, thread_id: str) -> Any:
        """LangGraph's `StateSnapshot` of the thread now."""
        _, compiled, config = self._api._thread(thread_id)
        return compiled.get_state(config)

    def trace(self, thread_id: str) -> list[dict[str, Any]]:
        self._api._thread(thread_id)
        return self._api.tracer.read(thread_id)

    def threads(self) -> list[ThreadInfo]:
        out = []
        for thread_id, updated_ms in self._api.saver.threads():
            meta = self._api._meta(thread_id)
            out.append(
                ThreadInfo(
                    thread_id=thread_id,
                    graph=meta.get("graph"),
                    status=self._api.status_of(meta),
                    updated_at=updated_ms / 1000,
                )
            )
        return out

    def draw(
        self, graph: str, format: drawing.Format = "mermaid", thread_id: str | None = None
    ) -> str:
        """The graph as Mermaid, ASCII, SVG or a self-contained HTML page, without the network."""
        spec = self._api.graphs.get(graph)
        compiled = self._api._graph(spec, None)
        path = None
        if thread_id is not None:
            meta = self._api._meta(thread_id)
            if meta.get("graph") != graph:
                raise NotFoundError(f"no thread {thread_id!r} of graph {graph!r}")
            path = drawing.path_of(compiled, self._api._config(thread_id))
        return drawing.render(compiled, format, path, title=graph)
