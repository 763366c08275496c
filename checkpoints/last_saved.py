"""What a run's saver wrote for its thread, kept in memory: the run's end state without a read.

While a run holds its thread's lock, it is the only writer of the thread's checkpoints, so
the newest root checkpoint its saver put and the pending writes put against it are the
thread's state as `get_tuple` would read it back. `AsyncRedisSaver.watch` keeps one
`LastSaved` per watched thread; any write of it that fails marks it `broken`, and the
caller then reads the thread from Redis as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    PendingWrite,
)

from graphwright.checkpoints.head import Head
from graphwright.checkpoints.ops import Ctx, stored_metadata, tuple_config

Field = tuple[str, int]  # a write's field in the saver's hash: (task id, idx)
Kept = tuple[str, PendingWrite]  # its task path, the write


@dataclass(kw_only=True)
class LastSaved:
    """The newest root checkpoint a watched thread's saver put, with the writes against it."""

    thread_id: str
    broken: bool = False  # a write failed (or the thread was watched twice): read Redis instead
    config: RunnableConfig | None = None  # the config its put was given (names its parent)
    checkpoint: Checkpoint | None = None
    metadata: CheckpointMetadata | None = None
    checkpoint_id: str = ""
    # Pending writes by checkpoint id: an async-durability put may land after its writes.
    writes: dict[str, dict[Field, Kept]] = field(default_factory=dict)

    def put(self, config: RunnableConfig, checkpoint: Checkpoint, meta: CheckpointMetadata) -> None:
        """A root checkpoint was saved; the newest (by id, as a thread's head is) is kept."""
        if checkpoint["id"] <= self.checkpoint_id:
            return
        self.config, self.checkpoint, self.metadata = config, checkpoint, meta
        self.checkpoint_id = checkpoint["id"]
        for cid in [c for c in self.writes if c < self.checkpoint_id]:
            del self.writes[cid]  # older steps' writes: never part of the state again

    def put_writes(
        self, checkpoint_id: str, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str
    ) -> None:
        """Writes were saved against `checkpoint_id`, kept as the saver's script keeps them.

        A regular write stays as first written; a special one (negative idx) is replaced.
        """
        if checkpoint_id < self.checkpoint_id:
            return
        kept = self.writes.setdefault(checkpoint_id, {})
        for idx, (channel, value) in enumerate(writes):
            widx = WRITES_IDX_MAP.get(channel, idx)
            key = (task_id, widx)
            if widx < 0 or key not in kept:
                kept[key] = (task_path, (task_id, channel, value))

    def tuple(self, ctx: Ctx) -> CheckpointTuple | None:
        """The tuple `get_tuple` would read for the thread's latest root checkpoint, or None.

        None when nothing was saved, or a write failed: the caller reads Redis.
        """
        if self.broken or self.checkpoint is None or self.config is None:
            return None
        cp = self.checkpoint
        values = cp["channel_values"]
        tid, cid = self.thread_id, self.checkpoint_id
        parent = self.config["configurable"].get("checkpoint_id")
        kept = self.writes.get(cid, {})
        return CheckpointTuple(
            config=tuple_config(tid, "", cid),
            # As stored: a value for each versioned channel that has one.
            checkpoint={
                **cp,
                "channel_values": {c: values[c] for c in cp["channel_versions"] if c in values},
            },
            metadata=stored_metadata(ctx, self.config, self.metadata or {}),
            parent_config=tuple_config(tid, "", parent) if parent else None,
            # Ordered as `codec.decode_writes` orders them (LangGraph's `writes_sort_key`).
            pending_writes=[
                kept[k][1] for k in sorted(kept, key=lambda k: (kept[k][0], k[0], k[1]))
            ],
        )

    def head(self) -> Head | None:
        """The thread's head (`checkpoints.head`) as the saved writes leave it, or None."""
        if self.broken or self.checkpoint is None:
            return None
        writes = len(self.writes.get(self.checkpoint_id, {}))
        return Head(checkpoint_id=self.checkpoint_id, writes=writes)
