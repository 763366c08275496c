"""The official langgraph-sdk client (sync and async) against graphwright's HTTP service."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from langgraph_sdk import get_client, get_sync_client

from graphwright import Orchestrator
from graphwright.locking import thread_lock
from graphwright.offline import OfflineChatModel
from graphwright.server.records.assistant_store import system_id
from graphwright.settings import Settings
from graphwright.testing.service import Service, running

pytestmark = pytest.mark.valkey  # on Valkey, the embedded default's server

EMAIL = 'Email li@example.com with the subject "Weekly report" saying the report is ready.'


@pytest.fixture
def service(settings: Settings) -> Iterator[Service]:
    with running(Orchestrator(settings=settings, model=OfflineChatModel())) as svc:
        yield svc


def test_wait_stops_at_the_gate_and_a_resume_command_completes(service: Service) -> None:
    client = get_sync_client(url=service.url, api_key=None)
    thread = client.threads.create()
    tid = thread["thread_id"]
    assert thread["status"] == "idle"
    first = client.runs.wait(tid, "agent", input={"goal": EMAIL})
    interrupt = first["__interrupt__"][0]["value"]
    call = interrupt["calls"][0]
    assert call["tool"] == "send_email" and call["args"]["to"] == "li@example.com"
    assert client.threads.get(tid)["status"] == "interrupted"
    decision = {call["id"]: {"action": "approve", "digest": call["digest"]}}
    done = client.runs.wait(tid, "agent", command={"resume": decision})
    assert "__interrupt__" not in done and "Sent 'Weekly report'" in done["answer"]
    assert client.threads.get(tid)["status"] == "idle"

    state = client.threads.get_state(tid)
    mine = service.orch.state(tid)
    assert state["values"]["answer"] == mine.values["answer"]
    assert state["next"] == mine.next == []
    assert state["checkpoint"]["checkpoint_id"] == mine.checkpoint_id
    history = client.threads.get_history(tid, limit=100)
    assert [h["checkpoint"]["checkpoint_id"] for h in history] == [
        h.checkpoint_id for h in service.orch.history(tid)
    ]
    assert [h["next"] for h in history] == [h.next for h in service.orch.history(tid)]


def test_a_bad_decision_is_refused_and_changes_nothing(service: Service) -> None:
    client = get_sync_client(url=service.url, api_key=None)
    tid = client.threads.create()["thread_id"]
    call = client.runs.wait(tid, "agent", input={"goal": EMAIL})["__interrupt__"][0]["value"][
        "calls"
    ][0]
    before = client.threads.get_state(tid)["checkpoint"]["checkpoint_id"]
    with pytest.raises(httpx.HTTPStatusError) as caught:
        client.runs.wait(
            tid,
            "agent",
            command={"resume": {call["id"]: {"action": "approve", "digest": "0" * 16}}},
        )
    assert caught.value.response.status_code == 422
    assert "made for other arguments" in caught.value.response.text
    assert client.threads.get_state(tid)["checkpoint"]["checkpoint_id"] == before


def test_stream_yields_metadata_then_updates_in_order(service: Service) -> None:
    client = get_sync_client(url=service.url, api_key=None)
    tid = client.threads.create()["thread_id"]
    parts = list(
        client.runs.stream(
            tid, "agent", input={"goal": "订单 A1001 到哪了？"}, stream_mode="updates"
        )
    )
    events = [p.event for p in parts]
    assert events[0] == "metadata" and set(events[1:]) == {
        "updates"
    }  # no `end`, like the reference
    nodes = [next(iter(p.data)) for p in parts if p.event == "updates"]
    assert nodes == ["plan", "act", "observe", "plan", "act", "observe", "plan"]
    assert client.runs.get(tid, parts[0].data["run_id"])["status"] == "success"
    values = list(
        client.runs.stream(
            tid, "agent", input={"goal": "订单 A1002 发货了吗？"}, stream_mode="values"
        )
    )
    assert "已付款" in [p for p in values if p.event == "values"][-1].data["answer"]


def test_assistants_and_their_graphs(service: Service) -> None:
    client = get_sync_client(url=service.url, api_key=None)
    found = {a["graph_id"]: a["assistant_id"] for a in client.assistants.search()}
    assert found == {g: system_id(g) for g in ("agent", "orchestrator", "order_support")}
    assert client.assistants.get("agent")["graph_id"] == "agent"  # a graph name names its assistant
    graph = client.assistants.get_graph("agent")
    assert {n["id"] for n in graph["nodes"]} >= {"plan", "act", "observe", "compact", "human_gate"}
    assert {"source": "act", "target": "observe"} in [
        {"source": e["source"], "target": e["target"]} for e in graph["edges"]
    ]
    xray = client.assistants.get_graph("orchestrator", xray=True)
    assert "scheduler:human_gate" in {n["id"] for n in xray["nodes"]}
    schemas = client.assistants.get_schemas("agent")
    assert "goal" in schemas["input_schema"]["properties"]


def test_background_run_is_joined_and_listed(service: Service) -> None:
    client = get_sync_client(url=service.url, api_key=None)
    tid = client.threads.create(metadata={"team": "support"})["thread_id"]
    run = client.runs.create(
        tid,
        "order_support",
        input={"messages": [{"role": "user", "content": "订单 A1001 到哪了？"}]},
    )
    assert run["status"] == "pending"
    values = client.runs.join(tid, run["run_id"])
    assert "派送中" in values["answer"]
    assert client.runs.get(tid, run["run_id"])["status"] == "success"
    assert [r["run_id"] for r in client.runs.list(tid)] == [run["run_id"]]
    found = client.threads.search(metadata={"team": "support"})
    assert [t["thread_id"] for t in found] == [tid]
    client.threads.delete(tid)
    with pytest.raises(httpx.HTTPStatusError) as caught:
        client.threads.get(tid)
    assert caught.value.response.status_code == 404


def test_a_second_run_on_a_busy_thread_gets_409(service: Service) -> None:
    client = get_sync_client(url=service.url, api_key=None)
    tid = client.threads.create()["thread_id"]
    with (
        thread_lock(service.orch.client, service.orch.keys, tid),
        pytest.raises(httpx.HTTPStatusError) as caught,
    ):
        client.runs.wait(
            tid, "agent", input={"goal": "订单 A1001 到哪了？"}, multitask_strategy="reject"
        )
    assert caught.value.response.status_code == 409
    assert (
        client.runs.wait(tid, "agent", input={"goal": "订单 A1001 到哪了？"})["stop_reason"]
        == "answered"
    )


async def test_the_async_client_runs_the_same_flow(service: Service) -> None:
    client = get_client(url=service.url, api_key=None)
    tid = (await client.threads.create())["thread_id"]
    first = await client.runs.wait(tid, "agent", input={"goal": EMAIL})
    call = first["__interrupt__"][0]["value"]["calls"][0]
    done = await client.runs.wait(
        tid, "agent", command={"resume": {call["id"]: {"action": "reject", "reason": "not today"}}}
    )
    assert "not today" in done["answer"]
    state = await client.threads.get_state(tid)
    assert state["values"]["stop_reason"] == "answered"
    run = await client.runs.create(tid, "agent", input={"goal": "订单 A1002 发货了吗？"})
    joined = await client.runs.join(tid, run["run_id"])
    assert "已付款" in joined["answer"]
    parts = [
        p
        async for p in client.runs.stream(
            tid, "agent", input={"goal": "订单 A9999 呢？"}, stream_mode="updates"
        )
    ]
    assert parts[0].event == "metadata" and parts[-1].event == "updates"


def test_a_run_with_a_user_id_in_metadata_remembers_for_that_user(service: Service) -> None:
    client = get_sync_client(url=service.url, api_key=None)
    tid = client.threads.create()["thread_id"]
    client.runs.wait(tid, "agent", input={"goal": "以后用中文回答"}, metadata={"user_id": "erin"})
    assert [(r.key, r.value) for r in service.orch.memories("erin")] == [("language", "中文")]
