"""The users' store is the users': every namespace LangGraph accepts works over `/store`
(`("memories", user)` of LangGraph's memory-agent template included), graphwright's own
memories live in a store of their own that no namespace reaches, and the memories an older
graphwright kept in the users' store move there with `graphwright memory migrate`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from langgraph_sdk import get_sync_client
from typer.testing import CliRunner

from graphwright import Orchestrator
from graphwright.checkpoints.keys import SERVICE_STORE, USER_STORE
from graphwright.checkpoints.memory import MemoryBook, Source, scope_of
from graphwright.checkpoints.store_ops import Layout
from graphwright.cli import app
from graphwright.offline import OfflineChatModel
from graphwright.settings import Settings
from graphwright.testing.service import Service, running

# Labels LangGraph's store accepts (non-empty strings, no period, no NUL, root not
# "langgraph"), with characters of the key grammar in them.
ODD = ["a b", "ü:{x}*|%2E", "memories", "service-store", "store"]


@pytest.fixture
def service(settings: Settings) -> Iterator[Service]:
    with running(Orchestrator(settings=settings, model=OfflineChatModel()), worker=False) as svc:
        yield svc


def test_the_memory_agent_templates_namespace_works_like_any_other(service: Service) -> None:
    sdk = get_sync_client(url=service.url, api_key=None)
    sdk.store.put_item(["memories", "user-1"], "m1", {"content": "likes tea"})
    assert sdk.store.get_item(["memories", "user-1"], "m1")["value"] == {"content": "likes tea"}
    assert [i["key"] for i in sdk.store.search_items(["memories"])["items"]] == ["m1"]
    assert sdk.store.list_namespaces(prefix=["memories"])["namespaces"] == [["memories", "user-1"]]
    sdk.store.delete_item(["memories", "user-1"], "m1")
    assert sdk.store.get_item(["memories", "user-1"], "m1") is None


@pytest.mark.parametrize("label", ODD)
def test_every_label_langgraph_accepts_is_stored_and_read_back(
    service: Service, label: str
) -> None:
    sdk = get_sync_client(url=service.url, api_key=None)
    sdk.store.put_item([label, label], "k", {"label": label})
    assert sdk.store.get_item([label, label], "k")["value"] == {"label": label}
    assert sdk.store.list_namespaces(prefix=[label])["namespaces"] == [[label, label]]


def test_no_user_namespace_reaches_graphwrights_own_memories(service: Service) -> None:
    orch = service.orch
    alice = scope_of("user", "alice")
    orch.memory.remember(alice, "preference", "language", "Deutsch", Source(thread_id="t1"))
    sdk = get_sync_client(url=service.url, api_key=None)
    assert sdk.store.search_items([])["items"] == []
    assert sdk.store.list_namespaces()["namespaces"] == []
    assert sdk.store.get_item(["memories", alice], "language") is None
    sdk.store.put_item(["memories", alice], "language", {"value": "a user's own item"})
    sdk.store.delete_item(["memories", alice], "language")
    assert [(r.key, r.value) for r in orch.memories("alice")] == [("language", "Deutsch")]


def test_memory_migrate_moves_an_older_versions_memories_and_only_those(
    settings: Settings, redis_url: str, prefix: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    orch = Orchestrator(settings=settings, model=OfflineChatModel())
    try:
        ana = scope_of("user", "ana")
        old = MemoryBook(orch.store)  # where an older graphwright kept them: the users' store
        old.remember(ana, "fact", "city", "Lisbon", Source(thread_id="t0"))
        old.remember(
            scope_of("project", "default"), "procedure", "tone", "brief", Source(thread_id="t0")
        )
        orch.store.put(("memories", ana), "notes", {"text": "a user's item, not a record"})
        orch.store.put(("memories", "user-2"), "m", {"content": "the template's"})
        assert orch.memories("ana") == []  # not read from the users' store any more
        monkeypatch.setenv("REDIS_URL", redis_url)
        monkeypatch.setenv("GRAPHWRIGHT_KEY_PREFIX", prefix)
        monkeypatch.chdir(tmp_path)
        moved = CliRunner().invoke(app, ["memory", "migrate", "--json"])
        assert moved.exit_code == 0, moved.output
        assert json.loads(moved.stdout) == {"moved": 2}
        assert {(r.key, r.value) for r in orch.memories("ana")} == {
            ("city", "Lisbon"),
            ("tone", "brief"),
        }
        assert orch.store.get(("memories", ana), "city") is None
        assert orch.store.get(("memories", ana), "notes") is not None  # the user's stays
        assert orch.store.get(("memories", "user-2"), "m") is not None
        assert orch.adopt_memories() == 0  # once
    finally:
        orch.close()


def test_the_two_stores_key_templates_are_pinned() -> None:
    """The users' keys all start `gw:store:`, graphwright's `gw:service-store:`: no
    namespace of the one can spell a key of the other."""
    users, own = Layout(prefix=f"gw:{USER_STORE}"), Layout(prefix=f"gw:{SERVICE_STORE}")
    assert users.item(("memories", "user:ana"), "k") == "gw:store:{memories.user%3Aana}:item:k"
    assert (
        own.item(("memories", "user:ana"), "k") == "gw:service-store:{memories.user%3Aana}:item:k"
    )
    assert users.namespaces == "gw:store:namespaces"
    assert own.keys(("memories", "user:ana")) == "gw:service-store:{memories.user%3Aana}:keys"
