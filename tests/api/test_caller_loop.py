"""`ainvoke` and `astream` run on the caller's event loop, as LangGraph's own do.

No hand-over to the process's run loop and back for each run (where the run core's Redis
client serves every loop: a single server's, not a cluster's): the run's nodes see the
caller's loop and its context variables, cancelling the caller cancels the run and gives its
lock back, loops that come and go (`asyncio.run` per call) leave no connection open, and the
sync nodes of runs awaited at once are not held to asyncio's few default threads.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypedDict

import pytest
import redis
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph

from graphwright import Orchestrator
from graphwright.aconnect import loop_portable
from graphwright.graphs.registry import GraphRegistry
from graphwright.locking import held
from graphwright.offline import OfflineChatModel
from graphwright.project import compile_graph
from graphwright.settings import Settings
from graphwright.testing import redis_servers
from graphwright.testing.kit import settings_for, until
from graphwright.testing.until import scaled
from graphwright.tools.registry import ToolRegistry
from graphwright.tools.runloop import run_loop

REQUEST = contextvars.ContextVar("REQUEST", default="none")  # an application's request id
SEEN: dict[str, tuple[asyncio.AbstractEventLoop, str]] = {}  # per thread: the node's loop, id
GATE: dict[str, asyncio.Event] = {}  # per thread: what a held node waits for


class State(TypedDict):
    n: int


async def look(state: State, config: RunnableConfig) -> State:
    thread_id = config["configurable"]["thread_id"]
    SEEN[thread_id] = (asyncio.get_running_loop(), REQUEST.get())
    if thread_id in GATE:
        await GATE[thread_id].wait()
    return {"n": state["n"] + 1}


def one_node(name: str, node: Any) -> GraphRegistry:
    """A registry with one graph, `name`: START -> node -> END."""
    graph = StateGraph(State)
    graph.add_node("node", node)
    graph.add_edge(START, "node")
    graph.add_edge("node", END)
    registry = GraphRegistry()
    registry.register(
        name, lambda ctx: compile_graph(name, graph, ctx), make_input=None, tools=ToolRegistry
    )
    return registry


@pytest.fixture
def local(settings: Settings) -> Iterator[Orchestrator]:
    registry = one_node("looks", look)
    orch = Orchestrator(settings=settings, model=OfflineChatModel(), graphs=registry)
    if not loop_portable(orch.aclient):
        orch.close()
        pytest.skip("a cluster client serves the run loop only: its runs are handed there")
    yield orch
    orch.close()


def test_ainvoke_runs_on_the_callers_loop_with_its_context(local: Orchestrator) -> None:
    async def request() -> tuple[asyncio.AbstractEventLoop, Any]:
        REQUEST.set("req-7")
        result = await local.ainvoke("looks", {"n": 0}, thread_id="caller-loop")
        return asyncio.get_running_loop(), result

    caller, result = asyncio.run(request())
    assert result.status == "completed", result.error
    node_loop, request_id = SEEN["caller-loop"]
    assert node_loop is caller, "the run went to another loop"
    assert node_loop is not run_loop()
    assert request_id == "req-7", "the run did not see the caller's context"
    assert local.state("caller-loop").values == {"n": 1}  # a sync read after that loop closed


def test_astream_runs_on_the_callers_loop(local: Orchestrator) -> None:
    async def request() -> tuple[asyncio.AbstractEventLoop, list[str]]:
        kinds = [e.kind async for e in local.astream("looks", {"n": 0}, thread_id="caller-st")]
        return asyncio.get_running_loop(), kinds

    caller, kinds = asyncio.run(request())
    assert kinds == ["step", "result"]
    assert SEEN["caller-st"][0] is caller


def test_a_cancelled_caller_cancels_its_run_and_gives_the_lock_back(
    local: Orchestrator,
) -> None:
    async def request() -> None:
        GATE["caller-cancel"] = asyncio.Event()  # never set: the node waits until cancelled
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(
                local.ainvoke("looks", {"n": 0}, thread_id="caller-cancel"), timeout=1.0
            )

    asyncio.run(request())
    del GATE["caller-cancel"]
    assert not held(local.client, local.keys, "caller-cancel")
    result = asyncio.run(local.aresume("caller-cancel"))
    assert result.status == "completed", result.error


def test_loops_that_come_and_go_leave_no_connection_open() -> None:
    """On a Redis of its own: no other test's client counts as one of these."""
    with redis_servers.redis_server() as server:
        settings = settings_for(server.url, GRAPHWRIGHT_REDIS_CLUSTER=False)  # a plain server
        orch = Orchestrator(
            settings=settings, model=OfflineChatModel(), graphs=one_node("looks", look)
        )
        watcher = redis.Redis.from_url(server.url)
        try:

            def connected() -> int:
                return len(watcher.client_list())

            asyncio.run(orch.ainvoke("looks", {"n": 0}))
            after_one = connected()
            for _ in range(6):  # a new loop each time, as `asyncio.run` per call makes
                asyncio.run(orch.ainvoke("looks", {"n": 0}))
            # The pools of closed loops are shut as the next loop arrives: at most the last
            # one's connections are open beyond those of the first.
            until(lambda: connected() <= after_one + 1, "the closed loops' connections to go")
        finally:
            watcher.close()
            orch.close()


def test_aclose_on_the_callers_loop_closes_its_connections(settings: Settings) -> None:
    watcher = redis.Redis.from_url(settings.redis_url)
    try:
        before = {c["id"] for c in watcher.client_list()}

        async def app() -> set[str]:
            orch = Orchestrator(settings=settings, model=OfflineChatModel())
            await orch.ainvoke("agent", "hello")
            opened = {c["id"] for c in watcher.client_list()} - before
            await orch.aclose()
            return opened

        opened = asyncio.run(app())
        assert opened, "the run opened no connection"
        until(
            lambda: not opened & {c["id"] for c in watcher.client_list()},
            "the orchestrator's connections to close",
        )
    finally:
        watcher.close()


def sync_wait(state: State) -> State:
    """A sync node, as graphwright's own are: it holds an executor thread while it waits."""
    BARRIER.wait()
    return {"n": state["n"] + 1}


AT_ONCE = 16
BARRIER = threading.Barrier(AT_ONCE, timeout=scaled(30))


def test_runs_awaited_at_once_get_a_thread_each_for_their_sync_nodes(
    settings: Settings,
) -> None:
    """asyncio's own default executor holds a few threads per core: 16 sync nodes waiting for
    each other would never all start in it, and every run would fail at the barrier."""
    registry = one_node("waits", sync_wait)
    orch = Orchestrator(settings=settings, model=OfflineChatModel(), graphs=registry)
    try:

        async def app() -> list[Any]:
            return await asyncio.gather(*(orch.ainvoke("waits", {"n": 0}) for _ in range(AT_ONCE)))

        results = asyncio.run(app())
        assert [r.status for r in results] == ["completed"] * AT_ONCE, results[0].error
    finally:
        orch.close()


def test_an_applications_own_default_executor_is_kept(local: Orchestrator) -> None:
    async def app() -> str:
        loop = asyncio.get_running_loop()
        loop.set_default_executor(ThreadPoolExecutor(2, thread_name_prefix="the-apps"))
        await local.ainvoke("looks", {"n": 0})
        return await loop.run_in_executor(None, lambda: threading.current_thread().name)

    assert asyncio.run(app()).startswith("the-apps")
