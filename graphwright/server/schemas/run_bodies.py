"""Request and response bodies of the HTTP service, shaped like the LangGraph API.

The API `langgraph-sdk` speaks. Unknown request fields the SDK may send are ignored; a field of the
wrong type is a 422 naming it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from graphwright.run_status import HttpRunStatus, HttpThreadStatus

ThreadStatus = HttpThreadStatus
RunStatus = HttpRunStatus
# "tools" and "lifecycle" are refused (422) on these endpoints, as the reference does.
StreamMode = Literal[
    "values",
    "updates",
    "events",
    "messages",
    "debug",
    "custom",
    "tasks",
    "checkpoints",
    "messages-tuple",
]


class _Request(BaseModel):
    model_config = ConfigDict(extra="ignore")


MAX_TTL_MINUTES = 100 * 365 * 24 * 60  # a century: Redis refuses expiries past 64-bit milliseconds


class ThreadCreate(_Request):
    thread_id: str | None = None
    metadata: dict[str, Any] | None = None
    if_exists: Literal["raise", "do_nothing"] | None = None


class ThreadSearch(_Request):
    metadata: dict[str, Any] | None = None
    status: ThreadStatus | None = None
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)


class HistoryRequest(_Request):
    limit: int = Field(default=10, ge=1, le=1000)
    before: dict[str, Any] | str | None = None


class AssistantSearch(_Request):
    graph_id: str | None = None
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)


class CommandBody(_Request):
    resume: Any = None
    update: dict[str, Any] | list[Any] | None = None
    goto: str | dict[str, Any] | list[str | dict[str, Any]] | None = None


class RunCreate(_Request):
    assistant_id: str = Field(min_length=1, description="a registered graph name")
    input: dict[str, Any] | list[Any] | str | int | float | bool | None = None
    command: CommandBody | None = None
    metadata: dict[str, Any] | None = None
    config: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    checkpoint: dict[str, Any] | None = None
    checkpoint_id: str | None = None
    checkpoint_during: bool | None = None
    interrupt_before: Literal["*"] | list[str] | None = None
    interrupt_after: Literal["*"] | list[str] | None = None
    stream_mode: StreamMode | list[StreamMode] = "values"
    stream_subgraphs: bool = False
    stream_resumable: bool = False
    on_disconnect: Literal["cancel", "continue"] | None = None
    on_completion: Literal["delete", "keep"] | None = None
    multitask_strategy: Literal["reject", "interrupt", "rollback", "enqueue"] | None = None
    if_not_exists: Literal["create", "reject"] | None = None
    after_seconds: float | None = Field(default=None, ge=0, le=86_400)  # a day at most
    webhook: str | None = None
    durability: Literal["sync", "async", "exit"] | None = None
    feedback_keys: list[str] | None = None

    def modes(self) -> list[str]:
        return [self.stream_mode] if isinstance(self.stream_mode, str) else list(self.stream_mode)


class BatchItem(RunCreate):
    """One run of `runs.create_batch`: stateless unless it names its thread."""

    thread_id: str | None = None


class CancelMany(_Request):
    thread_id: str | None = None
    run_ids: list[str] | None = None
    status: Literal["pending", "running", "all"] | None = None


class Assistant(BaseModel):
    assistant_id: str
    graph_id: str
    name: str
    description: str | None
    config: dict[str, Any] = Field(default_factory=dict)
    context: dict[str, Any] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)
    version: int = 1
    created_at: str
    updated_at: str


class Thread(BaseModel):
    thread_id: str
    created_at: str
    updated_at: str
    metadata: dict[str, Any]
    status: ThreadStatus
    values: dict[str, Any] | None = None
    interrupts: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)


class Checkpoint(BaseModel):
    thread_id: str
    checkpoint_ns: str = ""
    checkpoint_id: str | None


class ThreadStateBody(BaseModel):
    values: dict[str, Any]
    next: list[str]
    checkpoint: Checkpoint
    checkpoint_id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: str | None
    parent_checkpoint: Checkpoint | None = None
    parent_checkpoint_id: str | None = None
    tasks: list[dict[str, Any]] = Field(default_factory=list)
    interrupts: list[dict[str, Any]] = Field(default_factory=list)


class Run(BaseModel):
    run_id: str
    thread_id: str
    assistant_id: str
    created_at: str
    updated_at: str
    status: RunStatus
    metadata: dict[str, Any] = Field(default_factory=dict)
    multitask_strategy: str = "reject"
    kwargs: dict[str, Any] = Field(default_factory=dict)
    langsmith_session_name: str | None = None  # the reference's key; always empty here


class Health(BaseModel):
    ok: bool = True
