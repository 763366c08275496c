"""Binary encodings of what the saver stores: checkpoint documents, blobs and writes.

Pure functions, no I/O. Payloads come from LangGraph's serializer as
`(type, bytes)`; we add no JSON or base64 envelope around them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import ormsgpack
from langgraph.checkpoint.base import Checkpoint, CheckpointMetadata
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.types import _DeltaSnapshot

from graphwright.checkpoints.errors import CorruptCheckpointError
from graphwright.checkpoints.keys import escape, unescape

EMPTY = "empty"
SEP = "\x00"
FORMAT = 2  # layout 2: a thread is a fixed set of keys (see checkpoints.keys)
_SEP = b"\x00"


@dataclass(frozen=True, kw_only=True)
class Doc:
    """A checkpoint as stored: everything but the channel values."""

    ns: str
    checkpoint_id: str
    parent_id: str | None
    checkpoint: bytes
    checkpoint_type: str
    metadata: bytes
    metadata_type: str
    delta: bool = False  # the graph keeps a DeltaChannel (prune refuses such threads)
    run_id: str | None = None


def ns_prefix(ns: str) -> bytes:
    """The start of every member of a namespace: escaped `ns` then NUL."""
    return escape(ns).encode() + _SEP


def checkpoint_prefix(ns: str, checkpoint_id: str) -> bytes:
    """The start of a checkpoint's member and of each of its writes' members."""
    return ns_prefix(ns) + checkpoint_id.encode() + _SEP


def encode_doc(doc: Doc) -> bytes:
    """The checkpoint's member in the thread's sorted set."""
    body = ormsgpack.packb(
        [
            FORMAT,
            doc.parent_id,
            doc.checkpoint_type,
            doc.checkpoint,
            doc.metadata_type,
            doc.metadata,
            doc.delta,
            doc.run_id,
        ]
    )
    return checkpoint_prefix(doc.ns, doc.checkpoint_id) + body


def decode_doc(raw: bytes, *, key: str) -> Doc:
    """A stored checkpoint document, or CorruptCheckpointError naming `key` if it is not one."""
    try:
        ens, cid, body = raw.split(_SEP, 2)
        fmt, parent, ctype, cbytes, mtype, mbytes, delta, run_id = ormsgpack.unpackb(body)
        if fmt != FORMAT:
            raise ValueError(f"unknown document format {fmt!r}")
        return Doc(
            ns=unescape(ens.decode()),
            checkpoint_id=cid.decode(),
            parent_id=parent,
            checkpoint_type=ctype,
            checkpoint=cbytes,
            metadata_type=mtype,
            metadata=mbytes,
            delta=bool(delta),
            run_id=run_id,
        )
    except (ormsgpack.MsgpackDecodeError, ValueError, TypeError) as exc:
        raise CorruptCheckpointError(f"corrupt checkpoint document at key {key!r}: {exc}") from exc


def make_doc(
    serde: SerializerProtocol,
    ns: str,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    parent_id: str | None,
) -> Doc:
    """The document `put` stores: the checkpoint without its channel values, which go in blobs."""
    body = {k: v for k, v in checkpoint.items() if k != "channel_values"}
    ctype, cbytes = serde.dumps_typed(body)
    mtype, mbytes = serde.dumps_typed(metadata)
    delta = "counters_since_delta_snapshot" in metadata or any(
        isinstance(v, _DeltaSnapshot) for v in checkpoint["channel_values"].values()
    )
    run_id = metadata.get("run_id")
    return Doc(
        ns=ns,
        checkpoint_id=checkpoint["id"],
        parent_id=parent_id,
        checkpoint=cbytes,
        checkpoint_type=ctype,
        metadata=mbytes,
        metadata_type=mtype,
        delta=delta,
        run_id=str(run_id) if run_id else None,
    )


def load_checkpoint(serde: SerializerProtocol, doc: Doc, *, key: str) -> Checkpoint:
    """The document's checkpoint through `serde`; a corrupt one names `key`."""
    loaded: Checkpoint = _loads(serde, (doc.checkpoint_type, doc.checkpoint), key=key)
    return loaded


def load_metadata(serde: SerializerProtocol, doc: Doc, *, key: str) -> CheckpointMetadata:
    """The document's metadata through `serde`; a corrupt one names `key`."""
    loaded: CheckpointMetadata = _loads(serde, (doc.metadata_type, doc.metadata), key=key)
    return loaded


def blob_field(ns: str, channel: str, version: str | int | float) -> str:
    """A channel value's field in the thread's blob hash: one per namespace, channel, version."""
    return f"{escape(ns)}{SEP}{channel}{SEP}{version}"


def encode_typed(typed: tuple[str, bytes]) -> bytes:
    """A serde's `(type, bytes)` as one value: the type, the separator, the bytes."""
    return typed[0].encode() + SEP.encode() + typed[1]


def decode_typed(raw: bytes, *, key: str) -> tuple[str, bytes]:
    """Split what `encode_typed` joined; a value without the header is corrupt."""
    type_, sep, data = raw.partition(SEP.encode())
    if not sep:
        raise CorruptCheckpointError(f"corrupt value at key {key!r}: no type header")
    return type_.decode(), data


def load_blob(serde: SerializerProtocol, raw: bytes | None, *, key: str) -> tuple[bool, Any]:
    """Return `(present, value)`; an `empty` marker or a missing blob is absent."""
    if raw is None:
        return False, None
    typed = decode_typed(raw, key=key)
    if typed[0] == EMPTY:
        return False, None
    return True, _loads(serde, typed, key=key)


def encode_write(
    serde: SerializerProtocol,
    prefix: bytes,
    task_id: str,
    idx: int,
    channel: str,
    value: Any,
    task_path: str,
) -> tuple[bytes, bytes]:
    """`(field, value)` of one pending write; the field names (checkpoint, task, idx)."""
    type_, data = serde.dumps_typed(value)
    field = prefix + f"{task_id}{SEP}{idx}".encode()
    return field, ormsgpack.packb([channel, type_, data, task_path])


@dataclass(frozen=True, kw_only=True)
class StoredWrite:
    """A pending write as stored, its value still serialized (loaded only when asked for)."""

    task_id: str
    channel: str
    typed: tuple[str, bytes]
    task_path: str
    idx: int


def decode_writes(
    fields: list[bytes], values: list[bytes | None], *, key: str
) -> list[StoredWrite]:
    """Decode one checkpoint's writes, ordered by LangGraph's `writes_sort_key`."""
    out: list[StoredWrite] = []
    try:
        for field, value in zip(fields, values, strict=True):
            if value is None:  # indexed, not yet (or no longer) stored
                continue
            _, _, task_id, idx = field.split(_SEP, 3)
            channel, type_, data, task_path = ormsgpack.unpackb(value)
            out.append(
                StoredWrite(
                    task_id=task_id.decode(),
                    channel=channel,
                    typed=(type_, data),
                    task_path=task_path,
                    idx=int(idx),
                )
            )
    except (ormsgpack.MsgpackDecodeError, ValueError, TypeError) as exc:
        raise CorruptCheckpointError(f"corrupt pending writes at key {key!r}: {exc}") from exc
    out.sort(key=lambda w: (w.task_path, w.task_id, w.idx))
    return out


def load_write(serde: SerializerProtocol, write: StoredWrite, *, key: str) -> Any:
    """A stored write's value through `serde`; a corrupt one names `key`."""
    return _loads(serde, write.typed, key=key)


def _loads(serde: SerializerProtocol, typed: tuple[str, bytes], *, key: str) -> Any:
    try:
        return serde.loads_typed(typed)
    except Exception as exc:  # the serializer raises many types for bad bytes
        raise CorruptCheckpointError(
            f"cannot decode the value stored at key {key!r} ({typed[0]}): {exc}"
        ) from exc
