"""What a run's `configurable` and checkpoints say about the request that made it, as the
reference's do: the authenticated caller (never one the body claims), the request's id and
start; the run's configurable mirrored into its context, filtered by the graph's context
schema; and the reference's default `multitask_strategy`, `enqueue`. The anonymous case
is compared with `langgraph dev` in tests/differential/test_protocol_diff.py; this is the
signed-in one."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TypedDict

import pytest
from langgraph.graph import START, StateGraph
from langgraph.runtime import Runtime
from langgraph_sdk import get_sync_client

from graphwright import Orchestrator
from graphwright.locking import thread_lock
from graphwright.offline import OfflineChatModel
from graphwright.server.runs.payloads import run_context
from graphwright.settings import Settings
from graphwright.testing.service import Service, running
from tests.support import auth_owner

GOAL = {"goal": "订单 A1001 到哪了？"}
CLAIMED = {
    "langgraph_auth_user_id": "bob",
    "langgraph_auth_user": {"identity": "bob"},
    "langgraph_auth_permissions": ["admin"],
    "langgraph_request_id": "claimed",
    "__request_start_time_ms__": 1,
    "x": 1,
}


@pytest.fixture
def service(settings: Settings) -> Iterator[Service]:
    with running(
        Orchestrator(settings=settings, model=OfflineChatModel()), auth=auth_owner.auth
    ) as svc:
        yield svc


def test_a_run_names_its_signed_in_caller_not_the_one_its_body_claims(service: Service) -> None:
    alice = get_sync_client(
        url=service.url,
        api_key=None,
        headers={"Authorization": "Bearer token-alice", "x-request-id": "req-7"},
    )
    tid = alice.threads.create()["thread_id"]
    run = alice.runs.create(tid, "agent", input=GOAL, config={"configurable": CLAIMED})
    configurable = run["kwargs"]["config"]["configurable"]
    assert configurable["langgraph_auth_user_id"] == configurable["user_id"] == "alice"
    assert configurable["langgraph_auth_user"]["identity"] == "alice"
    assert configurable["langgraph_auth_permissions"] == ["threads:write"]
    assert configurable["langgraph_request_id"] == "req-7"
    assert configurable["__request_start_time_ms__"] > 1 and configurable["x"] == 1
    assert run["multitask_strategy"] == "enqueue"
    alice.runs.join(tid, run["run_id"])
    metadata = alice.threads.get_state(tid)["metadata"]
    assert metadata["thread_id"] == tid
    assert metadata["langgraph_auth_user_id"] == metadata["user_id"] == "alice"
    assert metadata["langgraph_request_id"] == "req-7"


def test_a_request_without_an_id_gets_a_new_one(service: Service) -> None:
    alice = get_sync_client(
        url=service.url, api_key=None, headers={"Authorization": "Bearer token-alice"}
    )
    tid = alice.threads.create()["thread_id"]
    ids = {
        alice.runs.create(tid, "agent", input=GOAL)["kwargs"]["config"]["configurable"][
            "langgraph_request_id"
        ]
        for _ in range(2)
    }
    assert len(ids) == 2 and all(uuid.UUID(i) for i in ids)


def test_a_run_naming_no_strategy_waits_for_a_busy_thread(service: Service) -> None:
    alice = get_sync_client(
        url=service.url, api_key=None, headers={"Authorization": "Bearer token-alice"}
    )
    tid = alice.threads.create()["thread_id"]
    with thread_lock(service.orch.client, service.orch.keys, tid):  # busy outside the service
        run = alice.runs.create(tid, "agent", input=GOAL)  # enqueued, not refused with 409
    alice.runs.join(tid, run["run_id"])
    assert alice.runs.get(tid, run["run_id"])["status"] == "success"


@dataclass
class Ctx:
    user: str = "nobody"


class Seen(TypedDict):
    user: str


def _who(state: Seen, runtime: Runtime[Ctx]) -> dict[str, str]:
    return {"user": runtime.context.user}


def test_a_mirrored_context_reaches_a_graph_filtered_by_its_context_schema() -> None:
    builder = StateGraph(Seen, context_schema=Ctx)
    builder.add_node("who", _who)
    builder.add_edge(START, "who")
    graph = builder.compile()
    mirrored = {"user": "alice", "thread_id": "t", "x": 1}  # a run's configurable, as its context
    with pytest.raises(TypeError):  # the dataclass takes no other keys
        graph.invoke({"user": ""}, context=mirrored)
    assert graph.invoke({"user": ""}, context=run_context(graph, mirrored))["user"] == "alice"
    untyped = StateGraph(Seen)
    untyped.add_node("who", lambda s: {"user": "x"})
    untyped.add_edge(START, "who")
    assert run_context(untyped.compile(), mirrored) == mirrored  # no schema: passed as it is
