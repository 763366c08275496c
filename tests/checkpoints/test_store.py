"""One behavioural suite for RedisStore and LangGraph's InMemoryStore: both must pass it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator

import pytest
import redis
import redis.asyncio as aredis
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.cluster import RedisCluster

from graphwright.checkpoints.errors import RedisUnavailableError
from graphwright.checkpoints.store import AsyncRedisStore, RedisStore
from graphwright.testing.until import scaled
from graphwright_errors import ConfigurationError
from tests.conftest import CLUSTER


@pytest.fixture(params=["redis", "memory"])
def store(request: pytest.FixtureRequest, client: redis.Redis, prefix: str) -> Iterator[BaseStore]:
    yield RedisStore(client, prefix=prefix) if request.param == "redis" else InMemoryStore()


def test_put_get_update_and_times(store: BaseStore) -> None:
    store.put(("users", "alice"), "prefs", {"lang": "zh", "n": 1})
    item = store.get(("users", "alice"), "prefs")
    assert item is not None and item.value == {"lang": "zh", "n": 1}
    assert item.namespace == ("users", "alice") and item.key == "prefs"
    store.put(("users", "alice"), "prefs", {"lang": "en", "n": 2})
    again = store.get(("users", "alice"), "prefs")
    assert again is not None and again.value == {"lang": "en", "n": 2}
    assert again.updated_at >= item.updated_at
    if isinstance(store, RedisStore):  # InMemoryStore restamps created_at on update; we keep it
        assert again.created_at == item.created_at
    assert store.get(("users", "alice"), "missing") is None
    assert store.get(("users", "bob"), "prefs") is None


def test_search_by_prefix_with_filters_and_pages(store: BaseStore) -> None:
    for i in range(5):
        store.put(
            ("docs", "a"),
            f"d{i}",
            {"n": i, "kind": "even" if i % 2 == 0 else "odd", "meta": {"lang": "zh"}},
        )
    store.put(("docs", "b"), "x", {"n": 10, "kind": "even", "meta": {"lang": "en"}})
    store.put(("other",), "y", {"n": 0, "kind": "even"})
    everything = store.search(("docs",), limit=100)
    assert sorted(i.key for i in everything) == ["d0", "d1", "d2", "d3", "d4", "x"]
    assert [i.key for i in store.search(("docs", "a"), limit=100)] == ["d0", "d1", "d2", "d3", "d4"]
    evens = store.search(("docs",), filter={"kind": "even"}, limit=100)
    assert sorted(i.key for i in evens) == ["d0", "d2", "d4", "x"]
    assert sorted(i.key for i in store.search(("docs",), filter={"n": {"$gte": 3}}, limit=100)) == [
        "d3",
        "d4",
        "x",
    ]
    assert sorted(
        i.key for i in store.search(("docs",), filter={"n": {"$ne": 0}, "kind": "even"}, limit=100)
    ) == ["d2", "d4", "x"]
    assert [i.key for i in store.search(("docs",), filter={"meta": {"lang": "en"}})] == ["x"]
    page = store.search(("docs", "a"), limit=2, offset=2)
    assert [i.key for i in page] == ["d2", "d3"]


def test_delete_removes_from_get_and_search(store: BaseStore) -> None:
    store.put(("m", "u1"), "k1", {"v": 1})
    store.put(("m", "u1"), "k2", {"v": 2})
    store.delete(("m", "u1"), "k1")
    assert store.get(("m", "u1"), "k1") is None
    assert [i.key for i in store.search(("m",))] == ["k2"]


def test_list_namespaces_with_prefix_suffix_and_depth(store: BaseStore) -> None:
    for ns in [("a", "b", "c"), ("a", "b", "d"), ("a", "e"), ("x", "b", "c")]:
        store.put(ns, "k", {"v": 1})
    assert store.list_namespaces() == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "e"),
        ("x", "b", "c"),
    ]
    assert store.list_namespaces(prefix=("a", "b")) == [("a", "b", "c"), ("a", "b", "d")]
    assert store.list_namespaces(suffix=("c",)) == [("a", "b", "c"), ("x", "b", "c")]
    assert store.list_namespaces(prefix=("*", "b")) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("x", "b", "c"),
    ]
    assert store.list_namespaces(max_depth=2) == [("a", "b"), ("a", "e"), ("x", "b")]
    assert store.list_namespaces(limit=2, offset=1) == [("a", "b", "d"), ("a", "e")]


def test_ttl_expires_items_where_supported(store: BaseStore) -> None:
    if not store.supports_ttl:
        with pytest.raises(NotImplementedError, match="TTL is not supported"):
            store.put(("t",), "k", {"v": 1}, ttl=0.01)
        return
    store.put(("t",), "short", {"v": 1}, ttl=1 / 60)  # one second
    store.put(("t",), "long", {"v": 2})
    assert store.get(("t",), "short") is not None
    deadline = time.monotonic() + scaled(10)
    while store.get(("t",), "short", refresh_ttl=False) is not None:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert [i.key for i in store.search(("t",))] == ["long"]


@pytest.fixture(params=["redis-sync", "redis-async", "memory"])
async def astore(
    request: pytest.FixtureRequest, redis_url: str, prefix: str
) -> AsyncIterator[BaseStore]:
    if request.param == "memory":
        yield InMemoryStore()
        return
    if request.param == "redis-sync":
        sync = RedisCluster.from_url(redis_url) if CLUSTER else redis.Redis.from_url(redis_url)
        yield RedisStore(sync, prefix=prefix)  # type: ignore[arg-type]  # same command API
        return
    client = AsyncRedisCluster.from_url(redis_url) if CLUSTER else aredis.Redis.from_url(redis_url)
    yield AsyncRedisStore(client, prefix=prefix)
    await client.aclose()


async def test_async_methods_behave_the_same(astore: BaseStore) -> None:
    await astore.aput(("as", "u1"), "k", {"v": 1, "tag": "x"})
    await astore.aput(("as", "u1"), "j", {"v": 2, "tag": "y"})
    await astore.aput(("as", "u2"), "k", {"v": 3, "tag": "x"})
    item = await astore.aget(("as", "u1"), "k")
    assert item is not None and item.value == {"v": 1, "tag": "x"}
    assert [i.key for i in await astore.asearch(("as", "u1"))] == ["k", "j"]
    found = await astore.asearch(("as",), filter={"tag": "x"}, limit=10)
    assert sorted((i.namespace[1], i.key) for i in found) == [("u1", "k"), ("u2", "k")]
    assert await astore.alist_namespaces(prefix=("as",)) == [("as", "u1"), ("as", "u2")]
    await astore.adelete(("as", "u1"), "k")
    assert await astore.aget(("as", "u1"), "k") is None
    assert [i.key for i in await astore.asearch(("as", "u1"))] == ["j"]
    if astore.supports_ttl:
        await astore.aput(("as",), "short", {"v": 0}, ttl=1 / 60)
        deadline = time.monotonic() + scaled(10)
        while await astore.aget(("as",), "short", refresh_ttl=False) is not None:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.1)


async def test_the_async_store_refuses_blocking_calls(redis_url: str, prefix: str) -> None:
    client = aredis.Redis.from_url(redis_url)
    with pytest.raises(ConfigurationError, match="asyncio-only"):
        AsyncRedisStore(client, prefix=prefix).get(("a",), "b")
    await client.aclose()


def test_semantic_search_with_an_embedding_function(client: redis.Redis, prefix: str) -> None:
    def embed(texts: list[str]) -> list[list[float]]:  # a tiny deterministic embedding
        return [[float("redis" in t.lower()), float("postgres" in t.lower()), 1.0] for t in texts]

    stores: list[BaseStore] = [
        RedisStore(client, prefix=prefix, index={"dims": 3, "embed": embed}),
        InMemoryStore(index={"dims": 3, "embed": embed}),
    ]
    for s in stores:
        s.put(("kb",), "pg", {"text": "Postgres tuning notes"})
        s.put(("kb",), "rd", {"text": "Redis streams and consumer groups"})
        hits = s.search(("kb",), query="how do redis streams work")
        assert [h.key for h in hits] == ["rd", "pg"] and hits[0].score is not None
        assert hits[0].score > (hits[1].score or 0)


def test_text_search_without_embeddings(client: redis.Redis, prefix: str) -> None:
    s = RedisStore(client, prefix=prefix)
    s.put(("kb",), "a", {"text": "Redis streams and consumer groups"})
    s.put(("kb",), "b", {"text": "Postgres vacuum"})
    assert [h.key for h in s.search(("kb",), query="redis consumer")] == ["a"]


def test_store_on_a_dead_redis_is_a_clear_error(prefix: str) -> None:
    s = RedisStore(redis.Redis(port=1, socket_connect_timeout=0.2), prefix=prefix)
    with pytest.raises(RedisUnavailableError, match="memory store cannot reach Redis"):
        s.get(("a",), "b")


def test_a_graph_compiled_with_the_store_reads_and_writes_it(
    client: redis.Redis, prefix: str
) -> None:
    from langgraph.graph import START, StateGraph
    from langgraph.runtime import Runtime
    from typing_extensions import TypedDict

    class S(TypedDict, total=False):
        seen: int

    def node(state: S, runtime: Runtime) -> dict[str, int]:
        store = runtime.store
        assert store is not None
        item = store.get(("counters",), "visits")
        count = (item.value["n"] if item else 0) + 1
        store.put(("counters",), "visits", {"n": count})
        return {"seen": count}

    shared = RedisStore(client, prefix=prefix)
    builder = StateGraph(S)
    builder.add_node("count", node)
    builder.add_edge(START, "count")
    graph = builder.compile(store=shared)
    assert graph.invoke({})["seen"] == 1 and graph.invoke({})["seen"] == 2
    assert RedisStore(client, prefix=prefix).get(("counters",), "visits").value == {"n": 2}  # type: ignore[union-attr]
