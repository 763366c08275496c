"""Request bodies of `/runs/crons`, the Agent Server's shapes.

`CronCreate`, `CronPatch`, `CronSearch`, `CronCountRequest`: the run fields a cron keeps are typed
as the reference types them, so a malformed one is a 422 naming it when the cron is stored, never a
failure when it fires.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, ConfigDict, Field, field_validator

from graphwright.server.schemas.run_bodies import StreamMode, _Request


def _date_time(value: str) -> str:
    """An ISO 8601 date-time, kept as given (the cron keeps the request as sent)."""
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise ValueError(f"{value!r} is not an ISO 8601 date-time") from exc
    return value


DateTime = Annotated[str, AfterValidator(_date_time)]


class CronConfig(_Request):
    model_config = ConfigDict(extra="allow")  # a graph's own config keys ride along
    tags: list[str] | None = None
    recursion_limit: int | None = None
    configurable: dict[str, Any] | None = None


class CronRunFields(_Request):
    """What a cron's runs are started with.

    Other keys are kept as given (the reference's `CronCreate` allows them).
    """

    model_config = ConfigDict(extra="allow")
    input: dict[str, Any] | list[dict[str, Any]] | None = None
    config: CronConfig | None = None
    context: dict[str, Any] | None = None
    webhook: str | None = Field(default=None, min_length=1, max_length=65536)
    interrupt_before: Literal["*"] | list[str] | None = None
    interrupt_after: Literal["*"] | list[str] | None = None
    stream_mode: StreamMode | list[StreamMode] | None = None
    stream_subgraphs: bool | None = None
    stream_resumable: bool | None = None
    durability: Literal["sync", "async", "exit"] | None = None
    multitask_strategy: Literal["reject", "interrupt", "rollback", "enqueue"] | None = None


class CronCreateBody(CronRunFields):
    assistant_id: str = Field(min_length=1)
    schedule: str
    end_time: DateTime | None = None
    enabled: bool = True
    timezone: str | None = None
    on_run_completed: Literal["delete", "keep"] | None = None
    metadata: dict[str, Any] | None = None


class CronPatchBody(CronRunFields):
    """Only the fields given change (`end_time: null` clears the end)."""

    assistant_id: str | None = Field(default=None, min_length=1)
    schedule: str | None = None
    end_time: DateTime | None = None
    enabled: bool | None = None
    timezone: str | None = None
    on_run_completed: Literal["delete", "keep"] | None = None
    metadata: dict[str, Any] | None = None

    @field_validator(
        "assistant_id",
        "schedule",
        "enabled",
        "timezone",
        "on_run_completed",
        "metadata",
        mode="before",
    )
    @classmethod
    def _given_not_null(cls, value: Any) -> Any:
        """Left out, a field is unchanged; null is no value for it (only `end_time` clears)."""
        if value is None:
            raise ValueError("may be left out, not null")
        return value


class CronSearchBody(_Request):
    assistant_id: str | None = None
    thread_id: str | None = None
    enabled: bool | None = None
    metadata: dict[str, Any] | None = None
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)
    sort_by: str | None = None
    sort_order: Literal["asc", "desc", "ASC", "DESC"] | None = None
    select: list[str] | None = None


class CronCountBody(_Request):
    assistant_id: str | None = None
    thread_id: str | None = None
    metadata: dict[str, Any] | None = None
