"""Layout 2 of the saver: fencing, the async saver's sync bridge, prune, delete by run,
stable listing, swept indexes and the migration of layout-1 threads."""

from __future__ import annotations

import asyncio
import operator
import threading
from typing import Annotated, Any, TypedDict

import ormsgpack
import pytest
import redis
import redis.asyncio as aredis
from langgraph.checkpoint.conformance.test_utils import generate_checkpoint, generate_metadata
from langgraph.graph import START, StateGraph

from graphwright.checkpoints.errors import LockLostError
from graphwright.checkpoints.redis import AsyncRedisSaver, RedisSaver
from graphwright.checkpoints.saver_base import SyncCallOnLoopError
from graphwright.testing.redis_servers import Server
from graphwright_errors import ConfigurationError


def _cfg(thread: str, cid: str | None = None, ns: str = "", **extra: Any) -> dict[str, Any]:
    conf: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ns, **extra}
    if cid:
        conf["checkpoint_id"] = cid
    return {"configurable": conf}


def _cp(**values: Any) -> Any:
    cp = generate_checkpoint(channel_values=values)
    cp["channel_versions"] = dict.fromkeys(values, 1)
    return cp


@pytest.fixture
def saver(client: redis.Redis, prefix: str) -> RedisSaver:
    return RedisSaver(client, prefix=prefix)


# --- fencing ---------------------------------------------------------------


def test_a_stale_fencing_token_is_refused_and_writes_nothing(
    saver: RedisSaver, client: redis.Redis
) -> None:
    client.set(saver.keys.fence("f"), 2)
    stored = saver.put(_cfg("f", gw_fence=2), _cp(a=1), generate_metadata(), {"a": 1})
    current = {"configurable": {**stored["configurable"], "gw_fence": 2}}
    saver.put_writes(current, [("a", 2)], "t1")
    client.incr(saver.keys.fence("f"))  # another process took the thread
    before = {k: client.dump(k) for k in saver.keys.saver_keys("f")}
    stale = {"configurable": {**stored["configurable"], "gw_fence": 2}}
    with pytest.raises(LockLostError, match="no longer holds the thread"):
        saver.put(stale, _cp(a=3), generate_metadata(), {"a": 2})
    with pytest.raises(LockLostError):
        saver.put_writes(stale, [("a", 9)], "t2")
    assert {k: client.dump(k) for k in saver.keys.saver_keys("f")} == before
    saver.put_writes({"configurable": {**stored["configurable"], "gw_fence": 3}}, [("a", 4)], "t3")
    no_token = saver.get_tuple(_cfg("f"))
    assert no_token is not None and len(no_token.pending_writes or []) == 2


async def test_the_async_saver_refuses_a_stale_token_too(
    redis_server: Server, client: redis.Redis, prefix: str
) -> None:
    aclient = aredis.Redis(port=redis_server.port)
    saver = AsyncRedisSaver(aclient, prefix=prefix)
    client.set(saver.keys.fence("af"), 5)
    stored = await saver.aput(_cfg("af", gw_fence=5), _cp(a=1), generate_metadata(), {"a": 1})
    with pytest.raises(LockLostError):
        await saver.aput(_cfg("af", gw_fence=4), _cp(a=2), generate_metadata(), {"a": 2})
    with pytest.raises(LockLostError):
        await saver.aput_writes(
            {"configurable": {**stored["configurable"], "gw_fence": 4}}, [("a", 1)], "t"
        )
    got = await saver.aget_tuple(_cfg("af"))
    assert got is not None and got.checkpoint["id"] == stored["configurable"]["checkpoint_id"]
    assert got.pending_writes == []
    await aclient.aclose()


class Notes(TypedDict):
    notes: Annotated[list[str], operator.add]


class Recording(RedisSaver):
    """Records the configurable of every put and put_writes LangGraph makes."""

    seen: list[tuple[str, dict[str, Any]]]

    def put(self, config: Any, *args: Any, **kwargs: Any) -> Any:
        self.seen.append(("put", dict(config["configurable"])))
        return super().put(config, *args, **kwargs)

    def put_writes(self, config: Any, *args: Any, **kwargs: Any) -> None:
        self.seen.append(("put_writes", dict(config["configurable"])))
        super().put_writes(config, *args, **kwargs)


def _nested_graph(saver: RedisSaver) -> Any:
    sub = StateGraph(Notes)
    sub.add_node("inner", lambda s: {"notes": ["inner"]})
    sub.add_edge(START, "inner")
    parent = StateGraph(Notes)
    parent.add_node("outer", lambda s: {"notes": ["outer"]})
    parent.add_node("sub", sub.compile())
    parent.add_edge(START, "outer")
    parent.add_edge("outer", "sub")
    return parent.compile(checkpointer=saver)


def test_langgraph_passes_the_token_to_every_write_including_subgraphs(
    client: redis.Redis, prefix: str
) -> None:
    saver = Recording(client, prefix=prefix)
    saver.seen = []
    client.set(saver.keys.fence("n"), 7)
    graph = _nested_graph(saver)
    out = graph.invoke({"notes": []}, {"configurable": {"thread_id": "n", "gw_fence": 7}})
    assert out == {"notes": ["outer", "outer", "inner"]}  # the subgraph returns its whole state
    assert {kind for kind, _ in saver.seen} == {"put", "put_writes"}
    assert any(conf.get("checkpoint_ns", "").startswith("sub:") for _, conf in saver.seen)
    assert all(conf.get("gw_fence") == 7 for _, conf in saver.seen)
    client.incr(saver.keys.fence("n"))
    with pytest.raises(LockLostError):
        graph.invoke({"notes": []}, {"configurable": {"thread_id": "n", "gw_fence": 7}})


# --- the async saver's sync methods ------------------------------------------


async def test_async_saver_sync_calls_bridge_from_other_threads_only(
    redis_server: Server, prefix: str
) -> None:
    aclient = aredis.Redis(port=redis_server.port)
    saver = AsyncRedisSaver(aclient, prefix=prefix)
    stored = await saver.aput(_cfg("b"), _cp(a=1), generate_metadata(), {"a": 1})
    await asyncio.to_thread(saver.put_writes, stored, [("a", 2)], "t")
    got = await asyncio.to_thread(saver.get_tuple, _cfg("b"))
    assert got is not None and got.pending_writes == [("t", "a", 2)]
    listed = await asyncio.to_thread(lambda: list(saver.list(_cfg("b"))))
    assert [t.checkpoint["id"] for t in listed] == [got.checkpoint["id"]]
    history = await asyncio.to_thread(
        lambda: saver.get_delta_channel_history(config=_cfg("b"), channels=["a"])
    )
    assert "a" in history
    with pytest.raises(SyncCallOnLoopError, match="aget_tuple"):
        saver.get_tuple(_cfg("b"))
    with pytest.raises(asyncio.InvalidStateError):
        saver.get_tuple(_cfg("b"))
    await asyncio.to_thread(saver.delete_thread, "b")
    assert await saver.aget_tuple(_cfg("b")) is None
    await aclient.aclose()


def test_a_sync_node_runs_a_subgraph_inside_an_async_graph(
    redis_server: Server, prefix: str
) -> None:
    async def main() -> Any:
        aclient = aredis.Redis(port=redis_server.port)
        saver = AsyncRedisSaver(aclient, prefix=prefix)
        sub = StateGraph(Notes)
        sub.add_node("inner", lambda s: {"notes": ["inner"]})
        sub.add_edge(START, "inner")
        compiled_sub = sub.compile(checkpointer=True)

        def calls_sub(state: Notes) -> dict[str, Any]:
            assert threading.current_thread() is not threading.main_thread()
            return {"notes": compiled_sub.invoke({"notes": []})["notes"]}

        parent = StateGraph(Notes)
        parent.add_node("calls_sub", calls_sub)
        parent.add_edge(START, "calls_sub")
        graph = parent.compile(checkpointer=saver)
        out = await graph.ainvoke({"notes": []}, {"configurable": {"thread_id": "s"}})
        await aclient.aclose()
        return out

    assert asyncio.run(main()) == {"notes": ["inner"]}


# --- prune, delete by run ----------------------------------------------------


def test_prune_refuses_a_string_of_thread_ids(saver: RedisSaver) -> None:
    saver.put(_cfg("a"), _cp(a=1), generate_metadata(), {"a": 1})
    with pytest.raises(ConfigurationError, match=r"\['abc'\]"):
        saver.prune("abc")  # type: ignore[arg-type]
    assert saver.get_tuple(_cfg("a")) is not None


def test_keep_latest_leaves_the_kept_checkpoint_without_a_parent_and_no_orphans(
    saver: RedisSaver, client: redis.Redis
) -> None:
    config: Any = _cfg("p")
    for step in range(5):
        cp = generate_checkpoint(channel_values={"a": step, "big": "same"})
        cp["channel_versions"] = {"a": step + 1, "big": 1}
        config = saver.put(
            config,
            cp,
            generate_metadata(step=step),
            {"a": step + 1, "big": 1} if not step else {"a": step + 1},
        )
        saver.put_writes(config, [("a", step)], f"t{step}")
    saver.prune(["p"])
    (kept,) = list(saver.list(_cfg("p")))
    assert kept.parent_config is None
    assert kept.checkpoint["channel_values"] == {"a": 4, "big": "same"}
    assert kept.pending_writes == [("t4", "a", 4)]
    assert client.hlen(saver.keys.blobs("p")) == 2
    assert client.hlen(saver.keys.writes("p")) == 1


def test_delete_for_runs_leaves_no_orphans(saver: RedisSaver, client: redis.Redis) -> None:
    config: Any = _cfg("r")
    for step, run in enumerate(["run-a", "run-a", "run-b"]):
        cp = generate_checkpoint(channel_values={"a": step})
        cp["channel_versions"] = {"a": step + 1}
        config = saver.put(config, cp, generate_metadata(step=step, run_id=run), {"a": step + 1})
        saver.put_writes(config, [("a", step)], f"t{step}")
    saver.delete_for_runs(["run-b"])
    assert [t.metadata["run_id"] for t in saver.list(_cfg("r"))] == ["run-a", "run-a"]
    assert client.hlen(saver.keys.blobs("r")) == 2
    assert client.hlen(saver.keys.writes("r")) == 2
    saver.delete_for_runs(["run-a"])
    assert list(saver.list(_cfg("r"))) == []
    assert not any(client.exists(k) for k in saver.keys.saver_keys("r"))
    assert client.zscore(saver.keys.thread_ids(), "r") is None


# --- listing and indexes -------------------------------------------------------


def test_listing_all_threads_is_stable_while_threads_are_written(saver: RedisSaver) -> None:
    threads = [f"th-{i:03}" for i in range(140)]
    for t in threads:
        saver.put(_cfg(t), _cp(a=1), generate_metadata(), {"a": 1})
    seen: list[str] = []
    for tup in saver.list(None):
        thread = tup.config["configurable"]["thread_id"]
        seen.append(thread)
        if len(seen) % 10 == 0:  # writes to listed and unlisted threads meanwhile
            for other in (thread, threads[-len(seen) // 10]):
                saver.put(_cfg(other), _cp(a=2), generate_metadata(), {"a": 2})
    # Every thread once, in id order: none skipped, none listed again after its turn.
    assert [t for i, t in enumerate(seen) if i == 0 or seen[i - 1] != t] == threads


def test_index_entries_of_expired_threads_are_swept(saver: RedisSaver, client: redis.Redis) -> None:
    for t in ("live", "gone"):
        saver.put(_cfg(t), _cp(a=1), generate_metadata(), {"a": 1})
    client.delete(*saver.keys.saver_keys("gone"))  # what a TTL does
    assert [t.config["configurable"]["thread_id"] for t in saver.list(None)] == ["live"]
    assert [t for t, _ in saver.threads()] == ["live"]
    assert client.zscore(saver.keys.thread_ids(), "gone") is None
    assert client.zscore(saver.keys.threads(), "gone") is None


# --- layout 1 -----------------------------------------------------------------


def test_a_thread_of_layout_1_is_migrated_when_read(saver: RedisSaver, client: redis.Redis) -> None:
    k, serde = saver.keys, saver.serde
    cp = _cp(a="old")
    body = {key: v for key, v in cp.items() if key != "channel_values"}
    ctype, cbytes = serde.dumps_typed(body)
    mtype, mbytes = serde.dumps_typed(generate_metadata(step=3, run_id="r-old"))
    cid = cp["id"]
    typed = serde.dumps_typed("old")
    write_type, write_data = serde.dumps_typed("w")
    old_keys = {
        k.legacy_checkpoints("l", ""): (
            "hash",
            {cid: ormsgpack.packb([cid, None, ctype, cbytes, mtype, mbytes])},
        ),
        k.legacy_blobs("l", ""): ("hash", {"a\x001": typed[0].encode() + b"\x00" + typed[1]}),
        k.legacy_writes("l", "", cid): (
            "hash",
            {"task\x000": ormsgpack.packb(["task", "a", write_type, write_data, ""])},
        ),
    }
    for key, (_, mapping) in old_keys.items():
        client.hset(key, mapping=mapping)
    client.sadd(k.legacy_namespaces("l"), "")
    client.set(f"{k.thread_tag('l')}::head", b"x")
    got = saver.get_tuple(_cfg("l"))
    assert got is not None
    assert got.checkpoint["channel_values"] == {"a": "old"}
    assert got.metadata["step"] == 3
    assert got.pending_writes == [("task", "a", "w")]
    assert sorted(x.decode() for x in client.keys(f"{k.thread_tag('l')}:*")) == sorted(
        [k.checkpoints("l"), k.blobs("l"), k.writes("l"), k.write_index("l"), k.run_ids("l")]
    )


def test_keep_latest_keeps_a_turn_saved_after_it_read_the_thread(
    client: redis.Redis, prefix: str
) -> None:
    """Redis twin of upstream's Postgres-only race test: a turn saved between prune's
    read and its write survives, and the thread runs on like an unpruned twin."""
    saver = RedisSaver(client, prefix=prefix)
    pruner = RedisSaver(client, prefix=prefix)
    graph = _nested_graph(saver)
    for _ in range(3):
        for thread in ("pruned", "twin"):
            graph.invoke({"notes": []}, {"configurable": {"thread_id": thread}})
    send = pruner._send
    calls = []

    def hooked(batch: Any) -> Any:
        replies = send(batch)
        calls.append(batch)
        if len(calls) == 1:  # prune has read the thread: a turn lands now
            graph.invoke({"notes": []}, {"configurable": {"thread_id": "pruned"}})
        return replies

    pruner._send = hooked  # type: ignore[method-assign]
    pruner.prune(["pruned"])
    graph.invoke({"notes": []}, {"configurable": {"thread_id": "twin"}})
    state = {
        t: graph.get_state({"configurable": {"thread_id": t}}).values for t in ("pruned", "twin")
    }
    assert state["pruned"] == state["twin"]
