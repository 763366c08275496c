"""What the API returns: pydantic models, so the CLI and HTTP service print them as JSON."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from graphwright.nodes.gate_models import GateRequest

RunStatus = Literal["completed", "interrupted", "stopped", "failed"]
ThreadStatus = Literal["running", "completed", "interrupted", "stopped", "failed"]


class Usage(BaseModel):
    """What a run spent: tokens, model calls and tool calls."""

    tokens: int = 0
    model_calls: int = 0
    tool_calls: int = 0
    tokens_estimated: bool = Field(
        default=False,
        description="some tokens were counted by graphwright: the model server "
        "reported no usage for a call",
    )


class RunResult(BaseModel):
    """The outcome of one invoke or resume."""

    thread_id: str
    graph: str
    run_id: str
    status: RunStatus
    answer: str | None = None
    stop_reason: str | None = None
    pending: GateRequest | None = Field(default=None, description="the gate waiting for a decision")
    steps: int = Field(default=0, description="LangGraph super-steps on the thread so far")
    usage: Usage = Field(default_factory=Usage)
    error: str | None = None


class StepEvent(BaseModel):
    """One event of a streamed run, as it happens.

    `step`: a node finished (`node`, its state `update`); `interrupt`: the run
    waits at a gate; `token`: a piece of a model reply (`text`, the `message_id`
    it belongs to, `node` that called the model, `namespace` of the worker
    subgraph if any); `result`: the last event, with the `RunResult`.
    """

    thread_id: str
    kind: Literal["step", "interrupt", "token", "result"]
    node: str | None = None
    update: dict[str, Any] = Field(default_factory=dict)
    result: RunResult | None = None
    run_id: str | None = None
    text: str | None = None
    message_id: str | None = None
    namespace: list[str] = Field(default_factory=list)


class ThreadInfo(BaseModel):
    """A thread as `threads` lists it."""

    thread_id: str
    graph: str | None
    status: ThreadStatus | None
    updated_at: float | None


class CheckpointInfo(BaseModel):
    """One checkpoint of a thread's history, as `history` lists it."""

    checkpoint_id: str
    step: int
    node: list[str] = Field(description="the node(s) whose writes produced this checkpoint")
    next: list[str]
    source: str | None
    created_at: str | None


class ThreadState(BaseModel):
    """A thread's current values and what it waits on."""

    thread_id: str
    graph: str | None
    status: ThreadStatus | None
    values: dict[str, Any]
    next: list[str]
    pending: GateRequest | None
    checkpoint_id: str | None


class ThreadSummary(BaseModel):
    """What `graphwright show` prints of a thread.

    Its `ThreadState` without the values, but for the answer and stop reason.
    """

    thread_id: str
    graph: str | None
    status: ThreadStatus | None
    next: list[str]
    stop_reason: Any = None
    answer: Any = None
    pending: GateRequest | None
    checkpoint_id: str | None
