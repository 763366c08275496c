"""Request bodies of `/store`, the Agent Server's shapes (its `Store*Request` schemas).

A body of another shape is a 422 naming the field, before any handler or route reads it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from graphwright.server.schemas.run_bodies import MAX_TTL_MINUTES, _Request


class PutBody(_Request):
    namespace: list[str]
    key: str
    value: dict[str, Any]
    index: Literal[False] | list[str] | None = None
    ttl: float | None = Field(default=None, ge=0, le=MAX_TTL_MINUTES)


class DeleteBody(_Request):
    namespace: list[str] = Field(default_factory=list)
    key: str


class SearchBody(_Request):
    namespace_prefix: list[str] | None = None
    filter: dict[str, Any] | None = None
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)
    query: str | None = None
    refresh_ttl: bool | None = None


class NamespacesBody(_Request):
    prefix: list[str] | None = None
    suffix: list[str] | None = None
    max_depth: int | None = Field(default=None, ge=1)
    limit: int = Field(default=100, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)
