"""Request bodies of `/threads` and thread state, shaped like the Agent Server's."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from graphwright.server.schemas.run_bodies import MAX_TTL_MINUTES, ThreadStatus, _Request


class ThreadTTL(_Request):
    strategy: Literal["delete"] = "delete"
    ttl: float = Field(gt=0, le=MAX_TTL_MINUTES, description="minutes until the thread is deleted")


class SuperstepUpdate(_Request):
    values: dict[str, Any] | list[Any] | None = None
    command: dict[str, Any] | None = None
    as_node: str


class Superstep(_Request):
    updates: list[SuperstepUpdate]


class ThreadCreateBody(_Request):
    thread_id: str | None = None
    metadata: dict[str, Any] | None = None
    if_exists: Literal["raise", "do_nothing"] | None = None
    ttl: ThreadTTL | None = None
    supersteps: list[Superstep] | None = None


class ThreadPatchBody(_Request):
    metadata: dict[str, Any] | None = None
    ttl: ThreadTTL | None = None


class ThreadSearchBody(_Request):
    metadata: dict[str, Any] | None = None
    values: dict[str, Any] | None = None
    ids: list[str] | None = None
    status: ThreadStatus | None = None
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)
    sort_by: (
        Literal["thread_id", "status", "created_at", "updated_at", "state_updated_at"] | None
    ) = None
    sort_order: Literal["asc", "desc", "ASC", "DESC"] | None = None
    select: list[str] | None = None
    extract: dict[str, str] | None = None


class ThreadCountBody(_Request):
    metadata: dict[str, Any] | None = None
    values: dict[str, Any] | None = None
    status: ThreadStatus | None = None


class ThreadPruneBody(_Request):
    thread_ids: list[str] = Field(default_factory=list)
    strategy: Literal["delete", "keep_latest"] = "delete"


class CheckpointRef(_Request):
    thread_id: str | None = None
    checkpoint_ns: str = ""
    checkpoint_id: str | None = None
    checkpoint_map: dict[str, Any] | None = None


class StateAtCheckpointBody(_Request):
    checkpoint: CheckpointRef
    subgraphs: bool = False


class StateUpdateBody(_Request):
    values: dict[str, Any] | list[Any] | None = None
    as_node: str | None = None
    checkpoint_id: str | None = None
    checkpoint: CheckpointRef | None = None


class HistoryBody(_Request):
    limit: int = Field(default=10, ge=1, le=1000)
    before: dict[str, Any] | str | None = None  # a checkpoint, a config holding one, or its id
    metadata: dict[str, Any] | None = None
    checkpoint: CheckpointRef | None = None
