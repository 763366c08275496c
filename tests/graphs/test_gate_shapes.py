"""graphwright's gate in LangChain's HITLRequest shape; LangChain's decisions lists on resume."""

from __future__ import annotations

import json

import pytest

from graphwright import GateDecisionError, Orchestrator
from graphwright.graphs.hitl import hitl_calls, hitl_resume
from graphwright.nodes.gate_models import GateRequest, PendingCall, digest, from_langchain
from graphwright.server.review.signed_cookie import secret_for, sign, verify

EMAIL = 'Email li@example.com with the subject "Weekly report" saying the report is ready.'


def test_the_gate_value_carries_an_hitl_request_view(orch: Orchestrator) -> None:
    waiting = orch.invoke("agent", EMAIL, thread_id="g1")
    value = orch.snapshot("g1").tasks[0].interrupts[0].value
    call = waiting.pending.calls[0] if waiting.pending else None
    assert call is not None
    assert value["action_requests"] == [
        {"name": "send_email", "args": call.args, "description": call.reason}
    ]
    assert value["review_configs"] == [
        {"action_name": "send_email", "allowed_decisions": ["approve", "edit", "reject"]}
    ]


def test_a_langchain_decisions_list_answers_a_graphwright_gate(orch: Orchestrator) -> None:
    orch.invoke("agent", EMAIL, thread_id="g2")
    with pytest.raises(GateDecisionError, match="2 decision"):
        orch.resume("g2", {"decisions": [{"type": "approve"}, {"type": "approve"}]})
    with pytest.raises(GateDecisionError, match=r"'respond' .* is not allowed"):
        orch.resume("g2", {"decisions": [{"type": "respond", "message": "done"}]})
    with pytest.raises(GateDecisionError, match="made for other arguments"):
        orch.resume("g2", {"decisions": [{"type": "approve", "digest": "0" * 16}]})
    assert orch.client.llen(orch.keys.outbox()) == 0  # refused answers changed nothing
    args = dict(orch.state("g2").pending.calls[0].args)  # type: ignore[union-attr]
    edit = {
        "type": "edit",
        "edited_action": {"name": "send_email", "args": {**args, "subject": "Edited"}},
    }
    done = orch.resume("g2", {"decisions": [edit]})
    assert done.status == "completed"
    (sent,) = [json.loads(m) for m in orch.client.lrange(orch.keys.outbox(), 0, -1)]
    assert sent["subject"] == "Edited"


def test_a_langchain_rejection_becomes_the_calls_observation(orch: Orchestrator) -> None:
    orch.invoke("agent", EMAIL, thread_id="g3")
    done = orch.resume("g3", {"decisions": [{"type": "reject", "message": "not today"}]})
    assert orch.client.llen(orch.keys.outbox()) == 0
    assert "not today" in str(orch.state("g3").values["messages"])
    assert done.status in ("completed", "stopped")


def hitl(allowed: list[str]) -> list[PendingCall]:
    value = {
        "action_requests": [
            {"name": "write", "args": {"n": 1}, "description": "writes"},
            {"name": "write", "args": {"n": 2}, "description": "writes"},
        ],
        "review_configs": [{"action_name": "write", "allowed_decisions": allowed}],
    }
    return hitl_calls(value, "intr", [])


def test_hitl_calls_are_bound_to_digests_and_allowed_decisions() -> None:
    a, b = hitl(["approve", "reject"])
    assert (a.id, b.id) == ("intr:0", "intr:1") and a.digest == digest("write", {"n": 1})
    assert GateRequest(calls=[a, b]).review_configs == [
        {"action_name": "write", "allowed_decisions": ["approve", "reject"]}
    ]
    assert hitl_resume(
        [a, b],
        {
            a.id: {"action": "approve", "digest": a.digest},
            b.id: {"action": "reject", "reason": "no"},
        },
    ) == {"decisions": [{"type": "approve"}, {"type": "reject", "message": "no"}]}
    with pytest.raises(GateDecisionError, match="edit is not allowed"):
        hitl_resume(
            [a, b],
            {
                a.id: {"action": "edit", "digest": a.digest, "args": {}},
                b.id: {"action": "approve", "digest": b.digest},
            },
        )
    with pytest.raises(GateDecisionError, match="missing: intr:1"):
        hitl_resume([a, b], {a.id: {"action": "approve", "digest": a.digest}})
    with pytest.raises(GateDecisionError, match="other arguments"):
        hitl_resume(
            [a, b], {"decisions": [{"type": "approve", "digest": b.digest}, {"type": "approve"}]}
        )
    assert hitl_resume(
        [a, b], {"decisions": [{"type": "approve", "digest": a.digest}, {"type": "reject"}]}
    ) == {"decisions": [{"type": "approve"}, {"type": "reject"}]}


def test_an_edit_cannot_switch_the_tool() -> None:
    (a, _) = hitl(["approve", "edit", "reject"])
    with pytest.raises(GateDecisionError, match="cannot switch the tool"):
        from_langchain([a], [{"type": "edit", "edited_action": {"name": "other", "args": {}}}])


def test_the_signed_cookie_refuses_tampering_expiry_and_another_key() -> None:
    secret = secret_for("key-1")
    token = sign({"sub": "reviewer"}, secret, ttl_s=60, now=1000)
    assert verify(token, secret, now=1030) == {"sub": "reviewer", "exp": 1060}
    assert verify(token, secret, now=1061) is None
    assert verify(token, secret_for("key-2"), now=1030) is None
    body, mac = token.split(".")
    assert verify(f"{body}x.{mac}", secret, now=1030) is None
    assert verify("not a token", secret) is None and verify(None, secret) is None
    assert "key-1" not in token
