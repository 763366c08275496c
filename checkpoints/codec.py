"""Binary encodings of what the saver stores: checkpoint documents, blobs and writes.

Pure functions, no I/O. Payloads come from LangGraph's serializer as
``(type, bytes)``; we add no JSON or base64 envelope around them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import ormsgpack
from langgraph.checkpoint.base import Checkpoint, CheckpointMetadata
from langgraph.checkpoint.serde.base import SerializerProtocol

from checkpoints.errors import CorruptCheckpointError

EMPTY = "empty"
SEP = "\x00"


@dataclass(frozen=True, kw_only=True)
class Doc:
    """A checkpoint as stored: everything but the channel values."""

    checkpoint_id: str
    parent_id: str | None
    checkpoint: bytes
    checkpoint_type: str
    metadata: bytes
    metadata_type: str


def encode_doc(doc: Doc) -> bytes:
    return ormsgpack.packb(
        [
            doc.checkpoint_id,
            doc.parent_id,
            doc.checkpoint_type,
            doc.checkpoint,
            doc.metadata_type,
            doc.metadata,
        ]
    )


def decode_doc(raw: bytes, *, key: str) -> Doc:
    try:
        cid, parent, ctype, cbytes, mtype, mbytes = ormsgpack.unpackb(raw)
        return Doc(
            checkpoint_id=str(cid),
            parent_id=parent,
            checkpoint_type=ctype,
            checkpoint=cbytes,
            metadata_type=mtype,
            metadata=mbytes,
        )
    except (ormsgpack.MsgpackDecodeError, ValueError, TypeError) as exc:
        raise CorruptCheckpointError(f"corrupt checkpoint document at key {key!r}: {exc}") from exc


def make_doc(
    serde: SerializerProtocol,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    parent_id: str | None,
) -> Doc:
    body = {k: v for k, v in checkpoint.items() if k != "channel_values"}
    ctype, cbytes = serde.dumps_typed(body)
    mtype, mbytes = serde.dumps_typed(metadata)
    return Doc(
        checkpoint_id=checkpoint["id"],
        parent_id=parent_id,
        checkpoint=cbytes,
        checkpoint_type=ctype,
        metadata=mbytes,
        metadata_type=mtype,
    )


def load_checkpoint(serde: SerializerProtocol, doc: Doc, *, key: str) -> Checkpoint:
    loaded: Checkpoint = _loads(serde, (doc.checkpoint_type, doc.checkpoint), key=key)
    return loaded


def load_metadata(serde: SerializerProtocol, doc: Doc, *, key: str) -> CheckpointMetadata:
    loaded: CheckpointMetadata = _loads(serde, (doc.metadata_type, doc.metadata), key=key)
    return loaded


def blob_field(channel: str, version: str | int | float) -> str:
    return f"{channel}{SEP}{version}"


def encode_typed(typed: tuple[str, bytes]) -> bytes:
    return typed[0].encode() + SEP.encode() + typed[1]


def decode_typed(raw: bytes, *, key: str) -> tuple[str, bytes]:
    type_, sep, data = raw.partition(SEP.encode())
    if not sep:
        raise CorruptCheckpointError(f"corrupt value at key {key!r}: no type header")
    return type_.decode(), data


def load_blob(serde: SerializerProtocol, raw: bytes | None, *, key: str) -> tuple[bool, Any]:
    """Return ``(present, value)``; an ``empty`` marker or a missing blob is absent."""
    if raw is None:
        return False, None
    typed = decode_typed(raw, key=key)
    if typed[0] == EMPTY:
        return False, None
    return True, _loads(serde, typed, key=key)


def write_field(task_id: str, idx: int) -> str:
    return f"{task_id}{SEP}{idx}"


def encode_write(
    serde: SerializerProtocol, task_id: str, channel: str, value: Any, task_path: str
) -> bytes:
    type_, data = serde.dumps_typed(value)
    return ormsgpack.packb([task_id, channel, type_, data, task_path])


@dataclass(frozen=True, kw_only=True)
class StoredWrite:
    task_id: str
    channel: str
    typed: tuple[str, bytes]
    task_path: str
    idx: int


def decode_writes(raw: dict[bytes, bytes], *, key: str) -> list[StoredWrite]:
    """Decode a writes hash, ordered by LangGraph's ``writes_sort_key``."""
    out: list[StoredWrite] = []
    try:
        for field, value in raw.items():
            idx = int(field.decode().rpartition(SEP)[2])
            task_id, channel, type_, data, task_path = ormsgpack.unpackb(value)
            out.append(
                StoredWrite(
                    task_id=task_id,
                    channel=channel,
                    typed=(type_, data),
                    task_path=task_path,
                    idx=idx,
                )
            )
    except (ormsgpack.MsgpackDecodeError, ValueError, TypeError) as exc:
        raise CorruptCheckpointError(f"corrupt pending writes at key {key!r}: {exc}") from exc
    out.sort(key=lambda w: (w.task_path, w.task_id, w.idx))
    return out


def load_write(serde: SerializerProtocol, write: StoredWrite, *, key: str) -> Any:
    return _loads(serde, write.typed, key=key)


def _loads(serde: SerializerProtocol, typed: tuple[str, bytes], *, key: str) -> Any:
    try:
        return serde.loads_typed(typed)
    except Exception as exc:  # the serializer raises many types for bad bytes
        raise CorruptCheckpointError(
            f"cannot decode the value stored at key {key!r} ({typed[0]}): {exc}"
        ) from exc
