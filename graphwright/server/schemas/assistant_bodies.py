"""Request bodies of `/assistants`, shaped like the Agent Server's."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from graphwright.server.schemas.run_bodies import _Request


class AssistantCreateBody(_Request):
    graph_id: str = Field(min_length=1)
    assistant_id: str | None = None
    config: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    if_exists: Literal["raise", "do_nothing"] | None = None
    name: str | None = None
    description: str | None = None


class AssistantPatchBody(_Request):
    graph_id: str | None = None
    config: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    name: str | None = None
    description: str | None = None


class AssistantSearchBody(_Request):
    graph_id: str | None = None
    name: str | None = None
    metadata: dict[str, Any] | None = None
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)
    sort_by: Literal["assistant_id", "graph_id", "name", "created_at", "updated_at"] | None = None
    sort_order: Literal["asc", "desc", "ASC", "DESC"] | None = None
    select: list[str] | None = None


class AssistantCountBody(_Request):
    graph_id: str | None = None
    name: str | None = None
    metadata: dict[str, Any] | None = None


class AssistantVersionsBody(_Request):
    metadata: dict[str, Any] | None = None
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)


class AssistantLatestBody(_Request):
    version: int = Field(ge=1)
