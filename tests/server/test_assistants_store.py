"""Assistants in Redis: system assistants per graph, versions, search, set_latest."""

from __future__ import annotations

import pytest
import redis

from graphwright.checkpoints.keys import Keys
from graphwright.server.records.assistant_store import AssistantStore, system_id
from graphwright_errors import ConflictError, NotFoundError, UserError


@pytest.fixture
def store(client: redis.Redis, prefix: str) -> AssistantStore:
    s = AssistantStore(client, Keys(prefix=prefix), lambda: ["agent", "order_support"])
    s.ensure_system({"agent": "The agent", "order_support": ""})
    return s


def test_system_assistants_have_the_reference_ids(store: AssistantStore) -> None:
    assert system_id("agent") == "fe096781-5601-53d2-b2f6-0d3403f7e9ca"
    agent = store.get("agent")
    assert agent["assistant_id"] == system_id("agent") and agent["metadata"] == {
        "created_by": "system"
    }
    assert store.get(system_id("agent")) == agent and agent["description"] == "The agent"
    store.ensure_system({"agent": "The agent", "order_support": ""})  # a restart changes nothing
    assert store.get("agent") == agent and store.count() == 2


def test_update_makes_versions_and_set_latest_goes_back(store: AssistantStore) -> None:
    made = store.create(
        graph_id="agent", name="Mail", context={"tone": "dry"}, metadata={"team": "a"}
    )
    assert made["config"] == {"configurable": {"tone": "dry"}} and made["version"] == 1
    aid = made["assistant_id"]
    second = store.update(aid, context={"tone": "warm"}, metadata={"owner": "li"})
    assert second["version"] == 2 and second["context"] == {"tone": "warm"}
    assert second["metadata"] == {"team": "a", "owner": "li"}
    assert [v["version"] for v in store.versions(aid)] == [2, 1]
    assert [v["version"] for v in store.versions(aid, metadata={"owner": "li"})] == [2]
    back = store.set_latest(aid, 1)
    assert back["version"] == 1 and back["context"] == {"tone": "dry"}
    assert store.update(aid, name="Mail 3")["version"] == 3
    with pytest.raises(NotFoundError):
        store.set_latest(aid, 9)


def test_search_count_conflicts_and_delete(store: AssistantStore) -> None:
    a = store.create(graph_id="agent", name="Alpha", metadata={"k": 1})
    b = store.create(graph_id="order_support", name="beta", metadata={"k": 2})
    assert [x["name"] for x in store.search(name="alp")] == ["Alpha"]
    assert store.count(metadata={"k": 2}) == 1 and store.count(graph_id="agent") == 2
    names = [x["name"] for x in store.search(sort_by="name", sort_order="asc")]
    assert names == sorted(names, key=str.lower)
    newest = store.search(limit=1, select=["assistant_id", "name"])  # newest first by default
    assert newest == [{"assistant_id": b["assistant_id"], "name": "beta"}]
    with pytest.raises(ConflictError):
        store.create(graph_id="agent", assistant_id=a["assistant_id"])
    assert (
        store.create(graph_id="agent", assistant_id=a["assistant_id"], if_exists="do_nothing") == a
    )
    with pytest.raises(NotFoundError):
        store.create(graph_id="nope")
    with pytest.raises(UserError):
        store.create(graph_id="agent", config={"configurable": {"x": 1}}, context={"y": 2})
    store.delete(a["assistant_id"])
    with pytest.raises(NotFoundError):
        store.get(a["assistant_id"])
