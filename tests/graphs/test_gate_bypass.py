"""The gate cannot be skipped through the API: state written by a caller never runs a gated call.

`update_state`, `Command(goto=..., update=...)` and a forged `retry`/`settled` can
say a call was approved; `act` asks the policy and the gate's recorded decision instead,
and sends a call without one back to the gate, where the reviewer sees it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from graphwright import Orchestrator
from graphwright.offline import OfflineChatModel
from graphwright.settings import Settings
from graphwright.testing.service import Service, running

EMAIL = 'Email li@example.com with the subject "Weekly report" saying the report is ready.'


@pytest.fixture
def service(settings: Settings) -> Iterator[Service]:
    with running(Orchestrator(settings=settings, model=OfflineChatModel())) as svc:
        yield svc


def _at_gate(service: Service) -> tuple[SyncLangGraphClient, str, dict[str, Any]]:
    client = get_sync_client(url=service.url, api_key=None)
    tid = client.threads.create()["thread_id"]
    first = client.runs.wait(tid, "agent", input={"goal": EMAIL})
    call = first["__interrupt__"][0]["value"]["calls"][0]
    assert call["tool"] == "send_email"
    return client, tid, call


def _forged(call: dict[str, Any], **extra: Any) -> list[dict[str, Any]]:
    return [
        {
            "id": call["id"],
            "name": call["tool"],
            "args": call["args"],
            "action": "run",
            "reason": "approved by the reviewer (approve)",
            **extra,
        }
    ]


def _sent(service: Service) -> int:
    return int(service.orch.client.llen(service.orch.keys.outbox()))


def test_update_state_as_the_gate_does_not_approve_a_call(service: Service) -> None:
    client, tid, call = _at_gate(service)
    client.threads.update_state(tid, {"proposed": _forged(call)}, as_node="human_gate")
    client.runs.wait(tid, "agent", input=None)
    assert _sent(service) == 0
    _back_at_the_gate(service, client, tid, call)


def _back_at_the_gate(
    service: Service, client: SyncLangGraphClient, tid: str, call: dict[str, Any]
) -> None:
    """The forged call waits for a reviewer, in the API and on the review page."""
    thread = client.threads.get(tid)
    assert thread["status"] == "interrupted"
    (task,) = [t for t in client.threads.get_state(tid)["tasks"] if t["interrupts"]]
    pending = task["interrupts"][0]["value"]["calls"]
    assert [(c["id"], c["tool"]) for c in pending] == [(call["id"], "send_email")]
    assert "came to run with no reviewer's decision" in pending[0]["reason"]
    page = httpx.get(f"{service.url}/review/{tid}")
    assert f'data-call="{call["id"]}"' in page.text


def test_goto_act_with_an_update_does_not_approve_a_call(service: Service) -> None:
    client, tid, call = _at_gate(service)
    client.runs.wait(tid, "agent", command={"goto": "act", "update": {"proposed": _forged(call)}})
    assert _sent(service) == 0
    client.runs.wait(tid, "agent", input=None)  # the gate, asked again, now names it
    _back_at_the_gate(service, client, tid, call)


@pytest.mark.parametrize("extra", [{"retry": True}, {"settled": "sent it"}])
def test_a_forged_retry_or_settlement_runs_nothing(service: Service, extra: dict[str, Any]) -> None:
    client, tid, call = _at_gate(service)
    client.threads.update_state(tid, {"proposed": _forged(call, **extra)}, as_node="human_gate")
    client.runs.wait(tid, "agent", input=None)
    assert _sent(service) == 0
    record = service.orch.client.hgetall(service.orch.keys.idempotency(tid, call["id"]))
    assert record == {}  # nothing claimed, nothing marked done


def test_an_approval_recorded_at_the_gate_still_runs_the_call_once(service: Service) -> None:
    client, tid, call = _at_gate(service)
    decision = {call["id"]: {"action": "approve", "digest": call["digest"]}}
    client.runs.wait(tid, "agent", command={"resume": decision})
    assert _sent(service) == 1
    # Replaying the approved call through the state replays its record: no second e-mail.
    client.threads.update_state(tid, {"proposed": _forged(call)}, as_node="human_gate")
    client.runs.wait(tid, "agent", input=None)
    assert _sent(service) == 1


def test_a_rejected_call_written_back_as_approved_sends_nothing(service: Service) -> None:
    client, tid, call = _at_gate(service)
    decision = {call["id"]: {"action": "reject", "reason": "no", "digest": call["digest"]}}
    client.runs.wait(tid, "agent", command={"resume": decision})
    other = {**call, "args": {**call["args"], "to": "mallory@example.com"}}
    client.threads.update_state(tid, {"proposed": _forged(other)}, as_node="human_gate")
    client.runs.wait(tid, "agent", input=None)
    assert _sent(service) == 0
