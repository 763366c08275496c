"""Drive the saver's I/O-free operations (`checkpoints/ops*.py`) without Redis: each
batch an operation yields is recorded and answered from a script of replies, so a test
reads the commands it would send and hands it the replies Redis would give."""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import Checkpoint, CheckpointMetadata
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from graphwright.checkpoints import codec
from graphwright.checkpoints.drive import drive, stream
from graphwright.checkpoints.keys import Keys
from graphwright.checkpoints.ops import Batch, Ctx

SERDE = JsonPlusSerializer()
KEYS = Keys(prefix="p")


def ctx(**kwargs: Any) -> Ctx:
    return Ctx(keys=KEYS, serde=SERDE, **kwargs)


def run(op: Generator[Batch, Any, Any], *replies: Any) -> tuple[Any, list[Batch]]:
    """The operation's result and the batches it sent, one reply per batch, all used."""
    batches: list[Batch] = []
    left = list(replies)

    def answer(batch: Batch) -> Any:
        batches.append(batch)
        assert left, f"batch {len(batches)} has no scripted reply: {batch}"
        return left.pop(0)

    result = drive(op, answer)
    assert not left, f"{len(left)} scripted replies unused after {len(batches)} batches"
    return result, batches


def run_listing(op: Generator[Any, Any, None], *replies: Any) -> tuple[list[Any], list[Batch]]:
    """`run` for a listing: the pages it passes out between its batches."""
    batches: list[Batch] = []
    left = list(replies)

    def answer(batch: Batch) -> Any:
        batches.append(batch)
        assert left, f"batch {len(batches)} has no scripted reply: {batch}"
        return left.pop(0)

    pages = list(stream(op, lambda item: isinstance(item, Batch), answer))
    assert not left, f"{len(left)} scripted replies unused after {len(batches)} batches"
    return pages, batches


def config(
    thread_id: str = "t", ns: str | None = "", checkpoint_id: str | None = None
) -> RunnableConfig:
    """A config as the savers get it; `ns=None` names no namespace (every one)."""
    conf: dict[str, Any] = {"thread_id": thread_id}
    if ns is not None:
        conf["checkpoint_ns"] = ns
    if checkpoint_id is not None:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf}


def checkpoint(
    checkpoint_id: str, versions: dict[str, Any] | None = None, **extra: Any
) -> Checkpoint:
    cp: Checkpoint = {
        "v": 4,
        "id": checkpoint_id,
        "ts": "2026-01-01T00:00:00+00:00",
        "channel_values": {},
        "channel_versions": versions or {},
        "versions_seen": {},
        "updated_channels": None,
    }
    return cast(Checkpoint, {**cp, **extra})


def doc(
    checkpoint_id: str,
    *,
    ns: str = "",
    parent: str | None = None,
    versions: dict[str, Any] | None = None,
    metadata: CheckpointMetadata | None = None,
    **extra: Any,
) -> codec.Doc:
    """A stored checkpoint document, as a put of this checkpoint writes it."""
    cp = checkpoint(checkpoint_id, versions, **extra)
    return codec.make_doc(SERDE, ns, cp, metadata or {}, parent)


def member(checkpoint_id: str, **kwargs: Any) -> bytes:
    """The sorted-set member of :func:`doc`, as Redis returns it."""
    return codec.encode_doc(doc(checkpoint_id, **kwargs))


def blob(value: Any) -> bytes:
    """A channel value as the blobs hash stores it."""
    return codec.encode_typed(SERDE.dumps_typed(value))


def write(
    ns: str, checkpoint_id: str, task_id: str, idx: int, channel: str, value: Any, path: str = ""
) -> tuple[bytes, bytes]:
    """A pending write's `(field, value)` as the writes hash stores it."""
    prefix = codec.checkpoint_prefix(ns, checkpoint_id)
    return codec.encode_write(SERDE, prefix, task_id, idx, channel, value, path)


def commands(batches: Sequence[Batch]) -> list[str]:
    """The command names of every batch, in order: what a test reads first."""
    return [str(c[0]) for b in batches for c in b.commands]
