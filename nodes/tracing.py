"""Who a step runs for (thread, run) and the trace event every model call records."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import RunnableConfig

from graphwright.checkpoints.trace import TraceWriter


def thread_of(config: RunnableConfig) -> str:
    """The run's thread id from its config."""
    return str((config.get("configurable") or {}).get("thread_id", ""))


def run_of(config: RunnableConfig) -> str:
    """The run's id from its config or its metadata."""
    return str(config.get("run_id") or (config.get("metadata") or {}).get("run_id") or "")


def fence_of(config: RunnableConfig) -> int | None:
    """The run's fencing token (see graphwright.locking), when the run holds a thread lock."""
    fence = (config.get("configurable") or {}).get("gw_fence")
    return int(fence) if fence is not None else None


def as_ai(message: Any) -> AIMessage:
    """A chat model's reply, checked: every model call here expects an AI message."""
    if not isinstance(message, AIMessage):
        raise TypeError(f"the chat model returned {type(message).__name__}, not an AIMessage")
    return message


def total_tokens(reply: AIMessage) -> int:
    """A reply's total tokens, 0 where the provider reported none."""
    return int(reply.usage_metadata["total_tokens"]) if reply.usage_metadata else 0


USAGE_ESTIMATED = "graphwright_usage_estimated"  # in response_metadata: counted by us


def estimate_usage(
    reply: AIMessage, request: Sequence[BaseMessage], count: Callable[[Sequence[BaseMessage]], int]
) -> None:
    """A reply without usage (a local server that reports none) gets counted usage.

    Marked estimated, so budgets and the run's usage do not read zero.
    """
    if reply.usage_metadata and reply.usage_metadata.get("total_tokens"):
        return
    prompt, output = count(request), count([reply])
    reply.usage_metadata = {
        "input_tokens": prompt,
        "output_tokens": output,
        "total_tokens": prompt + output,
    }
    reply.response_metadata[USAGE_ESTIMATED] = True


def trace_model_call(
    trace: TraceWriter,
    config: RunnableConfig,
    *,
    node: str,
    step: int,
    reply: AIMessage,
    started: float,
) -> None:
    """Model, request id, token usage, timing and proposed calls of one model call."""
    fields = model_call_event(reply, run_id=run_of(config), node=node, step=step, started=started)
    trace.emit(thread_of(config), "model_call", fence=fence_of(config), **fields)


def model_call_event(
    reply: AIMessage, *, run_id: str, node: str, step: int, started: float
) -> dict[str, Any]:
    """The fields of a `model_call` trace event, for `trace_model_call` or a coroutine's write."""
    usage = dict(reply.usage_metadata or {})
    return {
        "run_id": run_id,
        "step": step,
        "node": node,
        "model": reply.response_metadata.get("model_name"),
        "request_id": reply.response_metadata.get("id") or reply.id,
        "input_tokens": usage.get("input_tokens"),
        "output_tokens": usage.get("output_tokens"),
        "total_tokens": usage.get("total_tokens"),
        "usage_estimated": bool(reply.response_metadata.get(USAGE_ESTIMATED)),
        "start": started,
        "end": time.time(),
        "tool_calls": [{"name": c["name"], "args": c["args"]} for c in reply.tool_calls],
        "invalid_tool_calls": len(reply.invalid_tool_calls),
    }
