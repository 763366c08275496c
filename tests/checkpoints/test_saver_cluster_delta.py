"""The saver on a real 3-master Redis Cluster, and DeltaChannel history."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from typing import Annotated, Any, TypedDict

import pytest
import redis
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from redis.cluster import RedisCluster

from graphwright.checkpoints.redis import RedisSaver
from graphwright.testing.redis_servers import Server, start_cluster

pytestmark = pytest.mark.valkey  # on Valkey, the embedded default's server


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Server]]:
    servers = start_cluster(tmp_path_factory.mktemp("cluster"))
    yield servers
    for s in servers:
        s.stop()


class Loop(TypedDict):
    log: Annotated[list[str], lambda a, b: a + b]
    n: int


def _loop_graph(saver: BaseCheckpointSaver[Any], *, stop_at: int) -> Any:
    def work(state: Loop) -> dict[str, Any]:
        return {"log": [f"step {state['n']}"], "n": state["n"] + 1}

    def gate(state: Loop) -> dict[str, Any]:
        return {}

    def route(state: Loop) -> str:
        return "gate" if state["n"] == stop_at else ("work" if state["n"] < stop_at + 2 else END)

    b = StateGraph(Loop)
    b.add_node("work", work)
    b.add_node("gate", gate)
    b.add_edge(START, "work")
    b.add_conditional_edges("work", route, ["work", "gate", END])
    b.add_edge("gate", "work")
    return b.compile(checkpointer=saver, interrupt_before=["gate"])


def test_a_graph_runs_resumes_lists_and_deletes_on_a_redis_cluster(
    cluster: list[Server],
) -> None:
    client = RedisCluster(host="127.0.0.1", port=cluster[0].port)
    saver = RedisSaver(client, prefix="cl")
    threads = [f"cluster-{i}-{uuid.uuid4()}" for i in range(6)]
    for thread in threads:
        config = {"configurable": {"thread_id": thread}}
        graph = _loop_graph(saver, stop_at=2)
        graph.invoke({"log": [], "n": 0}, config)
        assert graph.get_state(config).next == ("gate",)
        resumed = _loop_graph(RedisSaver(client, prefix="cl"), stop_at=2)
        final = resumed.invoke(None, config)
        assert final["n"] == 4 and len(final["log"]) == 4
        assert len(list(saver.list(config))) >= 6
    slots = {client.keyslot(saver.keys.registry(t)) for t in threads}
    nodes = {client.nodes_manager.get_node_from_slot(s).port for s in slots}
    assert len(nodes) > 1, "threads should spread over several masters"
    assert {t for t, _ in saver.threads()} >= set(threads)
    for thread in threads:
        saver.delete_thread(thread)
        assert list(saver.list({"configurable": {"thread_id": thread}})) == []
    client.close()


def _concat(state: list[str], writes: Sequence[list[str]]) -> list[str]:
    out = list(state)
    for w in writes:
        out.extend(w)
    return out


class DeltaState(TypedDict):
    log: Annotated[list[str], DeltaChannel(_concat, snapshot_frequency=4)]
    n: int


def _delta_graph(saver: BaseCheckpointSaver[Any], steps: int) -> Any:
    def work(state: DeltaState) -> dict[str, Any]:
        return {"log": [f"entry {state['n']}"], "n": state["n"] + 1}

    b = StateGraph(DeltaState)
    b.add_node("work", work)
    b.add_edge(START, "work")
    b.add_conditional_edges("work", lambda s: "work" if s["n"] < steps else END, ["work", END])
    return b.compile(checkpointer=saver)


def test_delta_channel_state_matches_in_memory_saver(client: redis.Redis, prefix: str) -> None:
    config = {"configurable": {"thread_id": "delta"}, "recursion_limit": 100}
    ours = _delta_graph(RedisSaver(client, prefix=prefix), 11).invoke({"log": [], "n": 0}, config)
    theirs = _delta_graph(InMemorySaver(), 11).invoke({"log": [], "n": 0}, config)
    assert ours == theirs
    assert ours["log"] == [f"entry {i}" for i in range(11)]
    again = _delta_graph(RedisSaver(client, prefix=prefix), 11).get_state(config).values
    assert again == theirs


def test_batched_delta_history_equals_the_generic_parent_walk(
    client: redis.Redis, prefix: str
) -> None:
    saver = RedisSaver(client, prefix=prefix)
    config = {"configurable": {"thread_id": "walk"}, "recursion_limit": 100}
    _delta_graph(saver, 9).invoke({"log": [], "n": 0}, config)
    for snapshot in list(saver.list({"configurable": {"thread_id": "walk"}}))[:6]:
        fast = saver.get_delta_channel_history(config=snapshot.config, channels=["log", "n"])
        slow = BaseCheckpointSaver.get_delta_channel_history(
            saver, config=snapshot.config, channels=["log", "n"]
        )
        assert fast == slow
