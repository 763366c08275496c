"""Streams of a run: LangGraph's `astream` chunks as `StepEvent`s, and the final result.

`mode="steps"` yields one event per finished node; `mode="messages"` adds the
model's tokens as they arrive (LangGraph's `stream_mode="messages"`), from the top
graph and from worker subgraphs alike. Model calls tagged `nostream` (structured
JSON such as compaction notes or a split) are left out. `mode="result"` (`invoke`,
`resume`) yields none: nothing waits for them, so none is made.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any, Literal, cast

from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.runnables import RunnableConfig
from langgraph.types import Durability

from graphwright.graphs.context import Graph
from graphwright.results import RunResult, StepEvent
from graphwright.serialize import jsonable

StreamMode = Literal["steps", "messages"]
RunMode = Literal["steps", "messages", "result"]  # "result": the run's result only
LangGraphMode = Literal["updates", "messages"]


async def step_events(
    compiled: Graph,
    payload: Any,
    config: RunnableConfig,
    thread_id: str,
    run_id: str,
    mode: RunMode = "steps",
    *,
    durability: Durability | None = None,
    check: Callable[[], None] | None = None,
) -> AsyncIterator[StepEvent]:
    """Run `compiled` (`astream`, on the run loop) and translate what it streams.

    The caller adds the result event. `check` runs after every chunk (the thread lock's
    ownership check, which raises `LockLostError` when another process took the thread
    over).
    """
    modes: list[LangGraphMode] = ["updates", "messages"] if mode == "messages" else ["updates"]
    # Workers' tokens come only with subgraphs on; steps mode streams as it always did.
    nested = mode == "messages"
    async for item in compiled.astream(
        payload, config, stream_mode=modes, subgraphs=nested, durability=durability
    ):
        if check is not None:
            check()
        if mode == "result":
            continue
        namespace, kind, data = item if nested else ((), *item)
        if kind == "messages":
            event = token_event(
                cast(tuple[Any, dict[str, Any]], data), thread_id, run_id, list(namespace)
            )
            if event is not None:
                yield event
            continue
        if namespace:  # a worker's own steps; its tokens are streamed, its steps are not
            continue
        for node, update in cast(dict[str, Any], data).items():
            yield StepEvent(
                thread_id=thread_id,
                run_id=run_id,
                kind="interrupt" if node == "__interrupt__" else "step",
                node=node,
                update=jsonable(update if isinstance(update, dict) else {"interrupts": update}),
            )


def token_event(
    data: tuple[Any, dict[str, Any]], thread_id: str, run_id: str, namespace: list[str]
) -> StepEvent | None:
    """A text piece of a model reply as an event; tool messages and empty pieces are skipped."""
    message, metadata = data
    if not isinstance(message, AIMessageChunk | AIMessage):
        return None
    text = message.text if isinstance(message.text, str) else str(message.text)
    if not text:
        return None
    return StepEvent(
        thread_id=thread_id,
        run_id=run_id,
        kind="token",
        text=text,
        node=str(metadata.get("langgraph_node") or ""),
        message_id=message.id,
        namespace=namespace,
    )


def last_result(events: Iterable[StepEvent]) -> RunResult:
    """The result the last step event carries: how the run ended."""
    result = None
    for event in events:
        result = event.result or result
    if result is None:  # every path of _run ends with a result event
        raise RuntimeError("the run produced no result")
    return result


async def alast_result(events: AsyncIterator[StepEvent]) -> RunResult:
    """`last_result` of an async stream."""
    result = None
    async for event in events:
        result = event.result or result
    if result is None:
        raise RuntimeError("the run produced no result")
    return result
