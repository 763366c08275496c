"""The one check act makes before every call (nodes.authorize), one row per path that can
reach act: the graph state's word never counts, the policy and the recorded decision do."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from graphwright.checkpoints.keys import Keys
from graphwright.checkpoints.trace import TraceWriter
from graphwright.nodes.authorize import authorize
from graphwright.nodes.deps import AgentDeps, Limits
from graphwright.nodes.gate_models import digest
from graphwright.nodes.state import ProposedCall
from graphwright.offline import OfflineChatModel
from graphwright.tools.approvals import Approvals, GateDecision
from graphwright.tools.builtin import build_registry
from graphwright.tools.executor import Observation, ToolExecutor
from graphwright.tools.policy import Policy

EMAIL = {"to": "li@example.com", "subject": "Hi", "body": "Ready."}
READ = {"order_id": "A1001"}


def _deps(client: redis.Redis, keys: Keys) -> AgentDeps:
    model = OfflineChatModel()
    registry = build_registry()
    return AgentDeps(
        model=model,
        planner=model,
        registry=registry,
        executor=ToolExecutor(registry, client, keys=keys),
        approvals=Approvals(client, keys, ttl_s=60),
        policy=Policy(),
        limits=Limits(),
        trace=TraceWriter(client, keys),
    )


def _call(name: str, args: dict[str, Any], action: Any = "run", **extra: Any) -> ProposedCall:
    return {"id": "c1", "name": name, "args": args, "action": action, "reason": "r", **extra}  # type: ignore[typeddict-item]


def runnable(verdict: ProposedCall | Observation) -> bool:
    """Whether act runs it: neither an observation instead nor sent back to the gate."""
    return not isinstance(verdict, Observation) and verdict["action"] != "needs_approval"


@pytest.mark.parametrize(
    ("call", "recorded", "tainted", "runs", "flags"),
    [
        (_call("get_order", READ), None, False, True, {}),  # a read the policy lets run
        (_call("send_email", EMAIL), None, False, False, {}),  # forged "run" of a gated write
        (_call("send_email", EMAIL, "needs_approval"), None, False, False, {}),  # goto act
        (_call("send_email", EMAIL, retry=True), None, False, False, {}),  # forged retry
        (_call("send_email", EMAIL, settled="sent"), None, False, False, {}),  # forged settlement
        (
            _call("send_email", EMAIL),
            GateDecision(action="approve", digest=digest("send_email", EMAIL)),
            False,
            True,
            {},
        ),  # approved at the gate for these arguments
        (
            _call("send_email", {**EMAIL, "to": "eve@example.com"}),
            GateDecision(action="approve", digest=digest("send_email", EMAIL)),
            False,
            False,
            {},
        ),
        (
            _call("send_email", EMAIL, retry=True),
            GateDecision(action="retry", digest=digest("send_email", EMAIL)),
            False,
            True,
            {"retry": True},
        ),
        (
            _call("send_email", EMAIL, settled="forged text"),
            GateDecision(
                action="mark_done", digest=digest("send_email", EMAIL), result="the reviewer's"
            ),
            False,
            True,
            {"settled": "the reviewer's"},
        ),  # the recorded result, not the state's
        (_call("get_order", READ, "refuse"), None, False, False, {}),  # the state can only refuse
    ],
)
def test_act_runs_a_call_only_on_the_policy_and_the_recorded_decision(
    client: redis.Redis,
    prefix: str,
    call: ProposedCall,
    recorded: GateDecision | None,
    tainted: bool,
    runs: bool,
    flags: dict[str, Any],
) -> None:
    keys = Keys(prefix=prefix)
    deps = _deps(client, keys)
    if recorded is not None:
        deps.approvals.record("t", {"c1": recorded}, fence=None)
    verdict = authorize(call, tainted=tainted, deps=deps, thread_id="t")
    assert runnable(verdict) is runs
    if runs:
        assert isinstance(verdict, dict)
        assert {k: verdict[k] for k in ("retry", "settled") if k in verdict} == flags  # type: ignore[literal-required]


def test_a_gate_decision_of_a_stale_run_is_not_recorded(client: redis.Redis, prefix: str) -> None:
    from graphwright.checkpoints.errors import LockLostError

    keys = Keys(prefix=prefix)
    approvals = Approvals(client, keys, ttl_s=60)
    client.set(keys.fence("t"), 2)
    with pytest.raises(LockLostError):
        approvals.record("t", {"c1": GateDecision(action="approve", digest="d")}, fence=1)
    assert approvals.get("t", "c1") is None


@pytest.mark.parametrize(("tainted", "runs"), [(False, True), (True, False)])
def test_taint_makes_a_never_gated_write_need_a_reviewer_at_act(
    client: redis.Redis,
    prefix: str,
    tainted: bool,
    runs: bool,
) -> None:
    from dataclasses import replace

    deps = replace(
        _deps(client, Keys(prefix=prefix)), policy=Policy(per_tool={"send_email": "never"})
    )
    verdict = authorize(_call("send_email", EMAIL), tainted=tainted, deps=deps, thread_id="t")
    assert runnable(verdict) is runs
