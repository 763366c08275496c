"""Threads over HTTP beyond the reference's own checks: assistant config in runs, thread TTL
on Redis expiry, the index repairing a dead run's status, subgraph state, search extract, the
thread a copy's checkpoints name."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from langgraph_sdk import get_sync_client

from graphwright import Orchestrator
from graphwright.checkpoints.codec import decode_doc
from graphwright.checkpoints.sealed import KEYS_ENV
from graphwright.offline import OfflineChatModel
from graphwright.settings import Settings
from graphwright.testing.service import Service, running, service_for
from graphwright.thread_index import Query

ORCH_GOAL = (
    "订单 A1001 到哪了？项目笔记里哪个方案提到 Redis？找到其中的预算表达式并计算总和。"
    "帮我安排“设计评审”，2026-12-01 10:00-11:00。"
)


@pytest.fixture
def service(redis_url: str, prefix: str) -> Iterator[Service]:
    with service_for(
        redis_url, prefix, "tests.support.plain_graphs:register", model=OfflineChatModel()
    ) as svc:
        yield svc


def test_an_assistants_config_reaches_its_runs_and_the_run_names_it(service: Service) -> None:
    sdk = get_sync_client(url=service.url, api_key=None)
    assistant = sdk.assistants.create(
        "counter", config={"configurable": {"label": "from-assistant"}}
    )
    tid = sdk.threads.create()["thread_id"]
    values = sdk.runs.wait(tid, assistant["assistant_id"], input={"goal": "g"})
    assert values["items"] == ["g", "step", "from-assistant"]
    run = sdk.runs.list(tid)[0]
    assert run["assistant_id"] == assistant["assistant_id"]
    meta = sdk.threads.get(tid)["metadata"]
    assert meta["graph_id"] == "counter" and meta["assistant_id"] == assistant["assistant_id"]
    tid2 = sdk.threads.create()["thread_id"]
    mine = sdk.runs.wait(
        tid2,
        assistant["assistant_id"],
        input={"goal": "g"},
        config={"configurable": {"label": "mine"}},
    )
    assert mine["items"] == ["g", "step", "mine"]  # the run's own config wins


def test_a_thread_ttl_is_a_redis_expiry_and_expired_threads_leave_search(service: Service) -> None:
    sdk = get_sync_client(url=service.url, api_key=None)
    orch = service.orch
    tid = sdk.threads.create(metadata={"kind": "short"}, ttl=1)["thread_id"]  # one minute
    assert 0 < orch.client.ttl(orch.keys.meta(tid)) <= 60
    sdk.runs.wait(tid, "counter", input={"goal": "g"})  # keys the run writes expire too
    registry = orch.client.smembers(orch.keys.registry(tid))
    left = {k: orch.client.ttl(k) for k in registry}
    assert left and all(t <= 60 and t != -1 for t in left.values())  # -2: a key gone already
    assert [t["thread_id"] for t in sdk.threads.search(metadata={"kind": "short"})] == [tid]
    assert orch.index.drop_expired(now=time.time() + 61) == [
        tid
    ]  # as the sweep sees it a minute on
    assert sdk.threads.count(metadata={"kind": "short"}) == 0


def test_search_repairs_the_status_of_a_thread_whose_run_died(service: Service) -> None:
    sdk = get_sync_client(url=service.url, api_key=None)
    tid = sdk.threads.create(metadata={"kind": "dead"})["thread_id"]
    service.orch.update_meta(tid, status="running")  # its process died: no lock is held
    assert service.orch.index.count(Query(status="busy")) == 1
    assert sdk.threads.search(status="busy") == []
    assert [t["thread_id"] for t in sdk.threads.search(status="error")] == [tid]
    assert sdk.threads.count(status="busy") == 0


def test_search_extracts_paths_from_each_thread(service: Service) -> None:
    sdk = get_sync_client(url=service.url, api_key=None)
    tid = sdk.threads.create(metadata={"kind": "x"})["thread_id"]
    sdk.runs.wait(tid, "counter", input={"goal": "g"})
    found = sdk.threads.search(
        metadata={"kind": "x"},
        select=["thread_id"],
        extract={"last": "values.items[-1]", "kind": "metadata.kind"},
    )
    assert found == [{"thread_id": tid, "extracted": {"last": "step", "kind": "x"}}]


def test_subgraph_state_comes_with_subgraphs_true(service: Service) -> None:
    service.orch.invoke("orchestrator", ORCH_GOAL, thread_id="orch-1")
    sdk = get_sync_client(url=service.url, api_key=None)
    flat = sdk.threads.get_state("orch-1")
    nested = sdk.threads.get_state("orch-1", subgraphs=True)
    assert flat["interrupts"] and all(t["state"] is None for t in flat["tasks"])
    inner = [t["state"] for t in nested["tasks"] if t["state"] is not None]
    assert inner and inner[0]["checkpoint"]["checkpoint_ns"].startswith(nested["tasks"][0]["name"])
    assert all(t["path"] for t in nested["tasks"])


def names(state: dict[str, Any]) -> set[Any]:
    """Every thread id one `get_state`/`get_history` entry names."""
    parent = state["parent_checkpoint"] or {}
    return {
        state["metadata"]["thread_id"],
        state["checkpoint"]["thread_id"],
        parent.get("thread_id", state["checkpoint"]["thread_id"]),
    }


@pytest.mark.parametrize("encrypt", [False, True], ids=["plain", "sealed"])
def test_a_copys_checkpoints_name_the_copy_and_the_source_keeps_its_own(
    redis_url: str, prefix: str, encrypt: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEYS_ENV, "k" * 32)
    settings = Settings(
        _env_file=None,
        REDIS_URL=redis_url,
        GRAPHWRIGHT_KEY_PREFIX=prefix,  # type: ignore[call-arg]
        GRAPHWRIGHT_GRAPHS="tests.support.plain_graphs:register",
        GRAPHWRIGHT_ENCRYPT=encrypt,
    )
    with running(Orchestrator(settings=settings, model=OfflineChatModel())) as svc:
        sdk = get_sync_client(url=svc.url, api_key=None)
        tid = sdk.threads.create()["thread_id"]
        for goal in ("a", "b"):
            sdk.runs.wait(tid, "counter", input={"goal": goal})
        before = sdk.threads.get_history(tid, limit=100)
        new = sdk.threads.copy(tid)["thread_id"]
        history = sdk.threads.get_history(new, limit=100)
        assert len(history) == len(before) > 2
        assert all(names(h) == {new} for h in history)
        assert names(sdk.threads.get_state(new)) == {new}
        assert [
            (h["checkpoint"]["checkpoint_id"], h["values"], h["next"], h["tasks"]) for h in history
        ] == [
            (h["checkpoint"]["checkpoint_id"], h["values"], h["next"], h["tasks"]) for h in before
        ]
        assert sdk.threads.get_history(tid, limit=100) == before
        assert all(names(h) == {tid} for h in before)
        stored = svc.orch.client.zrange(svc.orch.keys.checkpoints(new), 0, -1)
        docs = [decode_doc(m, key="") for m in stored]
        assert all(("+" in d.metadata_type) == encrypt for d in docs)  # sealed again, if on
        assert not encrypt or not any(new.encode() in m for m in stored)
