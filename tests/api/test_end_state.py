"""A run's end state taken from what its saver wrote is the state `aget_state` reads back.

`RunRecord` builds the thread's state and head after a run from the writes it kept
(`AsyncRedisSaver.watch`) instead of reading them: here both are compared, for runs that
complete, stop at an interrupt, fail in one of two parallel branches, and run subgraphs.
"""

from __future__ import annotations

import operator
import uuid
from collections.abc import AsyncIterator
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.types import Durability, StateSnapshot, interrupt

from graphwright.checkpoints.head import read_head
from graphwright.checkpoints.redis import AsyncRedisSaver
from graphwright.run_record import end_state, run_config


class State(TypedDict):
    """A counter and a log every branch adds to."""

    n: int
    log: Annotated[list[str], operator.add]


def add(name: str) -> Any:
    def node(state: State) -> dict[str, Any]:
        return {"n": state["n"] + 1, "log": [name]}

    return node


def fail(state: State) -> dict[str, Any]:
    raise ValueError("this branch fails")


def ask(state: State) -> dict[str, Any]:
    return {"log": [str(interrupt({"kind": "question", "n": state["n"]}))]}


def chain() -> StateGraph[State]:
    builder = StateGraph(State)
    for name in ("a", "b", "c"):
        builder.add_node(name, add(name))
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", "c")
    builder.add_edge("c", END)
    return builder


def asking() -> StateGraph[State]:
    builder = StateGraph(State)
    builder.add_node("a", add("a"))
    builder.add_node("ask", ask)
    builder.add_edge(START, "a")
    builder.add_edge("a", "ask")
    builder.add_edge("ask", END)
    return builder


def branching() -> StateGraph[State]:
    builder = StateGraph(State)
    builder.add_node("ok", lambda s: {"log": ["ok"]})
    builder.add_node("bad", fail)
    builder.add_edge(START, "ok")
    builder.add_edge(START, "bad")
    builder.add_edge("ok", END)
    builder.add_edge("bad", END)
    return builder


def nested() -> StateGraph[State]:
    builder = StateGraph(State)
    builder.add_node("inner", chain().compile())
    builder.add_node("after", add("after"))
    builder.add_edge(START, "inner")
    builder.add_edge("inner", "after")
    builder.add_edge("after", END)
    return builder


@pytest.fixture
async def saver(redis_url: str, prefix: str) -> AsyncIterator[AsyncRedisSaver]:
    saver = AsyncRedisSaver.from_url(redis_url, prefix=prefix)
    saver.stamp_thread = True  # as the Orchestrator's
    yield saver
    await saver.client.aclose()


def seen(snapshot: StateSnapshot) -> tuple[Any, ...]:
    """A snapshot's fields, a task's error as its text (the saver stores an error's repr)."""
    tasks = [(t.id, t.name, t.path, _text(t.error), t.interrupts, t.result) for t in snapshot.tasks]
    return (*snapshot[:6], tasks, snapshot.interrupts)


def _text(error: Any) -> str | None:
    return error if error is None or isinstance(error, str) else repr(error)


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
@pytest.mark.parametrize("build", [chain, asking, branching, nested])
async def test_the_state_a_run_wrote_is_the_state_read_back(
    saver: AsyncRedisSaver, build: Any, durability: Durability, client: Any
) -> None:
    graph = build().compile(checkpointer=saver)
    thread_id = uuid.uuid4().hex
    config = run_config(thread_id)
    with saver.watch(thread_id) as saved:
        try:
            await graph.ainvoke({"n": 0, "log": []}, config, durability=durability)
        except ValueError:
            assert build is branching
            # LangGraph may submit a cancelled sibling's error write as its loop exits, after the
            # run has raised (1 run in 200 here): a run that raised reads its state instead
            # (`RunRecord.execute`, the HTTP executor alike).
            return
    snapshot, head = await end_state(graph, thread_id, saved)
    assert snapshot is not None
    assert seen(snapshot) == seen(await graph.aget_state(config))
    assert head == read_head(client, saver.keys, thread_id)


async def test_a_failed_write_leaves_the_state_to_be_read(saver: AsyncRedisSaver) -> None:
    graph = chain().compile(checkpointer=saver)
    thread_id = uuid.uuid4().hex
    with saver.watch(thread_id) as saved:
        await graph.ainvoke({"n": 0, "log": []}, run_config(thread_id))
        saved.broken = True  # as a write that raised leaves it
    assert await end_state(graph, thread_id, saved) == (None, None)


async def test_a_thread_watched_twice_is_read(saver: AsyncRedisSaver) -> None:
    graph = chain().compile(checkpointer=saver)
    thread_id = uuid.uuid4().hex
    with saver.watch(thread_id) as first, saver.watch(thread_id) as second:
        await graph.ainvoke({"n": 0, "log": []}, run_config(thread_id))
    assert first.broken and second.broken
    assert not saver.watched
    assert await end_state(graph, thread_id, first) == (None, None)
