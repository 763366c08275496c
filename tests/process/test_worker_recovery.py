"""A run whose executor died after taking it re-applies its gate decision only to the gate
the decision was made for (the interrupt ids recorded when it was taken)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from langgraph_sdk import get_sync_client

from graphwright import Orchestrator
from graphwright.offline import OfflineChatModel
from graphwright.server.records.run_store import RunStore
from graphwright.server.runs.execution import Executor
from graphwright.server.schemas.run_bodies import RunCreate
from graphwright.settings import Settings
from graphwright.testing.service import Service, running
from graphwright.testing.until import until

# Slow: worker processes restarted over a queue
pytestmark = [pytest.mark.slow, pytest.mark.valkey]

EMAIL = 'Email li@example.com with the subject "Weekly report" saying the report is ready.'


@pytest.fixture
def service(settings: Settings) -> Iterator[Service]:
    with running(Orchestrator(settings=settings, model=OfflineChatModel()), worker=False) as svc:
        yield svc


def orphan_decision(svc: Service, gate_ids: list[str]) -> tuple[str, str]:
    """A thread at a gate, and a run answering it that a dead executor had taken."""
    sdk = get_sync_client(url=svc.url, api_key=None)
    tid = sdk.threads.create()["thread_id"]
    call = sdk.runs.wait(tid, "agent", input={"goal": EMAIL})["__interrupt__"][0]["value"]["calls"][
        0
    ]
    body = RunCreate(
        assistant_id="agent",
        command={
            "resume": {
                call["id"]: {  # type: ignore[arg-type]
                    "action": "approve",
                    "digest": call["digest"],
                }
            }
        },
    )
    store = RunStore(svc.orch.client, svc.orch.keys)
    run = store.create(tid, body, queue=False)
    store.update(
        tid,
        run.run_id,
        status="running",
        started="1",
        owner="dead-worker",
        gate=json.dumps(gate_ids or current_gate(svc, tid)),
    )
    return tid, run.run_id


def current_gate(svc: Service, tid: str) -> list[str]:
    state = svc.orch.snapshot(tid)
    return sorted({i.id for t in state.tasks for i in t.interrupts})


@pytest.mark.parametrize("same_gate", [True, False], ids=["its-gate", "another-gate"])
def test_a_recovered_decision_applies_only_to_its_own_gate(
    service: Service, same_gate: bool
) -> None:
    tid, run_id = orphan_decision(service, [] if same_gate else ["an-interrupt-of-another-gate"])
    executor = Executor(service.orch, RunStore(service.orch.client, service.orch.keys))
    # runs.wait answers as the first run ends, a moment before its executor lets the thread
    # go: "busy" is the retry a worker would make, so retry it the same way.
    assert (
        until(
            lambda: (o := executor.run(tid, run_id)) != "busy" and o, "the thread lock let go", 10
        )
        == "done"
    )
    sent = service.orch.client.llen(service.orch.keys.outbox())  # the e-mails queued
    state = service.orch.state(tid)
    if same_gate:
        assert sent == 1 and state.status == "completed"
    else:
        assert sent == 0 and state.status == "interrupted" and state.pending is not None
    assert executor.store.get(tid, run_id).status == "success"
