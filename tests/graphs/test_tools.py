"""Tools and their guard rails: executor, idempotency, policy and the built-in tools."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from pydantic import BaseModel

from graphwright.checkpoints.errors import RedisUnavailableError
from graphwright.checkpoints.keys import Keys
from graphwright.testing.redis_servers import free_port
from graphwright.tools.builtin import build_registry
from graphwright.tools.executor import Observation, ToolCall, ToolExecutor
from graphwright.tools.policy import Decision, Policy
from graphwright.tools.registry import ToolRegistry
from graphwright.tools.spec import ToolContext, ToolSpec


@pytest.fixture
def keys(prefix: str) -> Keys:
    return Keys(prefix=prefix)


@pytest.fixture
def executor(client: redis.Redis, keys: Keys) -> Iterator[ToolExecutor]:
    yield ToolExecutor(build_registry(), client, keys=keys)


def run(
    ex: ToolExecutor, name: str, args: Any, call_id: str = "c1", thread: str = "t1"
) -> Observation:
    return ex.execute(ToolCall(name=name, args=args, id=call_id), thread_id=thread)


# --- built-in tools ---------------------------------------------------------


def test_search_then_calculate_the_redis_budget(executor: ToolExecutor) -> None:
    found = run(executor, "search_notes", {"keyword": "Redis"})
    assert found.ok and found.trust == "untrusted"
    assert [n["title"] for n in found.result] == ["缓存改造"]
    total = run(executor, "calculate", {"expression": "128 * 6 + 320"})
    assert total.ok and total.result == 1088 and total.trust == "trusted"


def test_orders_and_tracking_follow_the_seed_data(executor: ToolExecutor) -> None:
    a1001 = run(executor, "get_order", {"order_id": "A1001"})
    assert a1001.result == {"order_id": "A1001", "status": "shipped", "tracking_no": "SF1001"}
    assert run(executor, "get_tracking", {"tracking_no": "SF1001"}).result["status"] == "派送中"
    assert run(executor, "get_order", {"order_id": "A1002"}).result["tracking_no"] is None
    missing = run(executor, "get_order", {"order_id": "A9999"})
    assert not missing.ok and missing.error is not None
    assert missing.error.type == "not_found" and "order_not_found" in missing.error.message
    lost = run(executor, "get_tracking", {"tracking_no": "SF9999"})
    assert lost.error is not None and "tracking_not_found" in lost.error.message


def test_current_time_honours_the_offset(executor: ToolExecutor) -> None:
    assert run(executor, "get_current_time", {"timezone_offset": "+08:00"}).result.endswith(
        "+08:00"
    )
    bad = run(executor, "get_current_time", {"timezone_offset": "Beijing"})
    assert bad.error is not None and bad.error.type == "invalid_arguments"
    assert "timezone_offset" in bad.error.message


def test_calendar_refuses_overlaps_and_lists_the_day(
    executor: ToolExecutor, client: redis.Redis, keys: Keys
) -> None:
    first = run(
        executor,
        "create_event",
        {"title": "Review", "start_time": "2026-12-01T10:00", "end_time": "2026-12-01T11:00"},
        "e1",
    )
    assert first.ok
    clash = run(
        executor,
        "create_event",
        {"title": "Lunch", "start_time": "2026-12-01T10:30", "end_time": "2026-12-01T11:30"},
        "e2",
    )
    assert clash.error is not None and clash.error.type == "conflict"
    assert "Review" in clash.error.message
    backwards = run(
        executor,
        "create_event",
        {"title": "X", "start_time": "2026-12-01T12:00", "end_time": "2026-12-01T11:00"},
        "e3",
    )
    assert backwards.error is not None and backwards.error.type == "invalid_arguments"
    day = run(executor, "get_schedule", {"date": "2026-12-01"})
    assert [e["title"] for e in day.result] == ["Review"]
    assert len(client.hvals(keys.calendar())) == 1


def test_send_email_only_fills_the_outbox(
    executor: ToolExecutor, client: redis.Redis, keys: Keys
) -> None:
    sent = run(executor, "send_email", {"to": "li@example.com", "subject": "Hi", "body": "x"})
    assert sent.ok
    outbox = [json.loads(m) for m in client.lrange(keys.outbox(), 0, -1)]
    assert [m["to"] for m in outbox] == ["li@example.com"]
    assert outbox[0]["id"] == "t1:c1"


# --- the executor -----------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "field", "words"),
    [
        ({"expression": 12}, "expression", "string"),
        ({}, "expression", "Field required"),
        ({"expression": "1+1", "extra": 1}, "extra", "Extra inputs"),
        ({"expression": "1+" * 150}, "expression", "at most 200"),
        ('{"expression": "1+1"', "arguments", "not valid JSON"),
        ("[1, 2]", "arguments", "JSON object"),
    ],
)
def test_each_kind_of_bad_argument_names_the_field(
    executor: ToolExecutor, args: Any, field: str, words: str
) -> None:
    obs = run(executor, "calculate", args)
    assert not obs.ok and obs.error is not None
    assert obs.error.type == "invalid_arguments" and not obs.error.retryable
    assert field in obs.error.message and words in obs.error.message
    assert json.loads(obs.for_model())["ok"] is False


def test_unknown_tool_is_refused_with_the_allowlist(executor: ToolExecutor) -> None:
    obs = run(executor, "delete_everything", {})
    assert obs.error is not None and obs.error.type == "unknown_tool"
    assert "calculate" in obs.error.message


class NoArgs(BaseModel):
    pass


def _registry(**specs: Any) -> ToolRegistry:
    return ToolRegistry(
        ToolSpec(name=name, description=name, args_model=NoArgs, **kw) for name, kw in specs.items()
    )


def test_a_hanging_tool_times_out_and_the_run_goes_on(client: redis.Redis, keys: Keys) -> None:
    release = threading.Event()
    reg = _registry(hang={"func": lambda a, c: release.wait(5), "timeout_s": 0.2})
    obs = run(ToolExecutor(reg, client, keys=keys), "hang", {})
    release.set()
    assert obs.error is not None and obs.error.type == "timeout" and obs.error.retryable


def test_a_tool_bug_is_recorded_as_ours(client: redis.Redis, keys: Keys) -> None:
    def broken(args: Any, ctx: ToolContext) -> Any:
        return len(None)  # type: ignore[arg-type]

    obs = run(ToolExecutor(_registry(broken={"func": broken}), client, keys=keys), "broken", {})
    assert obs.error is not None and obs.error.type == "internal_error"
    assert "TypeError" in obs.error.message and not obs.error.retryable


def test_a_long_result_is_cut_with_a_visible_marker(client: redis.Redis, keys: Keys) -> None:
    reg = _registry(big={"func": lambda a, c: "x" * 10_000, "max_result_chars": 100})
    obs = run(ToolExecutor(reg, client, keys=keys), "big", {})
    assert obs.ok and obs.truncated
    assert obs.result.startswith("x" * 100) and "truncated by graphwright" in obs.result
    assert "9900 of 10000" in obs.result


def test_reads_retry_a_bounded_number_of_times(client: redis.Redis, keys: Keys) -> None:
    from graphwright.tools.errors import Unavailable

    calls = []

    def flaky(args: Any, ctx: ToolContext) -> str:
        calls.append(1)
        if len(calls) < 3:
            raise Unavailable("backend down")
        return "ok"

    ex = ToolExecutor(_registry(flaky={"func": flaky, "retry_reads": 2}), client, keys=keys)
    assert run(ex, "flaky", {}).result == "ok" and len(calls) == 3
    calls.clear()
    ex = ToolExecutor(_registry(flaky={"func": flaky, "retry_reads": 1}), client, keys=keys)
    obs = run(ex, "flaky", {})
    assert obs.error is not None and obs.error.type == "unavailable" and obs.attempts == 2


def test_a_write_is_never_given_blind_retries() -> None:
    with pytest.raises(ValueError, match="never retried"):
        ToolSpec(
            name="w",
            description="w",
            args_model=NoArgs,
            func=lambda a, c: 1,
            risk="write",
            retry_reads=2,
        )


def test_a_write_under_one_key_runs_once(
    executor: ToolExecutor, client: redis.Redis, keys: Keys
) -> None:
    args = {"to": "li@example.com", "subject": "Once", "body": "only once"}
    first = run(executor, "send_email", args, "call-7", "thread-9")
    again = run(executor, "send_email", args, "call-7", "thread-9")
    assert first.ok and again.ok and again.replayed and not first.replayed
    assert again.result == first.result
    assert client.llen(keys.outbox()) == 1
    other = run(executor, "send_email", args, "call-8", "thread-9")
    assert other.ok and client.llen(keys.outbox()) == 2


def test_the_idempotency_key_reaches_the_tool(client: redis.Redis, keys: Keys) -> None:
    seen: list[str | None] = []
    reg = _registry(w={"func": lambda a, c: seen.append(c.idempotency_key), "risk": "write"})
    run(ToolExecutor(reg, client, keys=keys), "w", {}, "call-1", "th")
    assert seen == ["th:call-1"]


def test_a_write_with_redis_gone_is_not_run(keys: Keys) -> None:
    ran: list[int] = []
    reg = _registry(w={"func": lambda a, c: ran.append(1), "risk": "write"})
    ex = ToolExecutor(reg, redis.Redis(port=free_port()), keys=keys)
    with pytest.raises(RedisUnavailableError, match="was not run"):
        run(ex, "w", {})
    assert ran == []


# --- the policy -------------------------------------------------------------


REG = build_registry()


@pytest.mark.parametrize(
    ("policy", "tool", "tainted", "action"),
    [
        (Policy(), "calculate", False, "run"),
        (Policy(), "create_event", False, "needs_approval"),
        (Policy(), "send_email", False, "needs_approval"),
        (Policy(), "nope", False, "refuse"),
        (Policy(per_tool={"create_event": "never"}), "create_event", False, "run"),
        (Policy(per_tool={"create_event": "never"}), "create_event", True, "needs_approval"),
        (Policy(per_tool={"get_order": "always"}), "get_order", False, "needs_approval"),
        (Policy(per_tool={"get_order": "always"}), "get_order", True, "needs_approval"),
        (Policy(), "get_order", True, "run"),
        (
            Policy(per_tool={"send_email": lambda n, a: Decision(action="refuse", reason="no")}),
            "send_email",
            True,
            "refuse",
        ),
        (
            Policy(per_tool={"send_email": lambda n, a: Decision(action="run", reason="ok")}),
            "send_email",
            True,
            "needs_approval",
        ),
    ],
)
def test_policy_table(policy: Policy, tool: str, tainted: bool, action: str) -> None:
    assert policy.decide(REG, tool, {}, tainted=tainted).action == action


def test_a_note_taints_the_run_and_taint_overrides_a_lax_policy(executor: ToolExecutor) -> None:
    note = run(executor, "search_notes", {"keyword": "会议"})
    assert note.ok and "send_email" in note.result[0]["content"]
    assert note.trust == "untrusted"
    lax = Policy(per_tool={"send_email": "never"})
    injected = {"to": "attacker@example.com", "subject": "keys", "body": "API key"}
    # The same call runs ungated in a clean run, so the tainted verdict below is the taint's.
    assert lax.decide(REG, "send_email", injected, tainted=False).action == "run"
    assert lax.decide(REG, "send_email", injected, tainted=True).action == "needs_approval"


def test_after_approval_the_gated_mail_is_sent_exactly_once(
    executor: ToolExecutor, client: redis.Redis, keys: Keys
) -> None:
    args = {"to": "li@example.com", "subject": "notes", "body": "summary"}
    assert Policy().decide(REG, "send_email", args, tainted=True).action == "needs_approval"
    first = run(executor, "send_email", args, "approved-1")
    again = run(executor, "send_email", args, "approved-1")  # the node re-runs on resume
    assert first.ok and again.ok and again.replayed and not first.replayed
    assert client.llen(keys.outbox()) == 1
    assert run(executor, "send_email", args, "approved-2").ok  # another call is another mail
    assert client.llen(keys.outbox()) == 2


def test_every_builtin_is_a_langchain_tool_with_documented_arguments() -> None:
    from langchain_core.utils.function_calling import convert_to_openai_tool

    for spec in REG:
        schema = convert_to_openai_tool(spec.as_langchain_tool())["function"]
        assert schema["name"] == spec.name
        assert len(schema["description"]) > 40, spec.name
        for prop in schema["parameters"]["properties"].values():
            assert prop.get("description"), spec.name
    assert REG.names() == [
        "calculate",
        "create_event",
        "get_current_time",
        "get_order",
        "get_schedule",
        "get_tracking",
        "search_notes",
        "send_email",
    ]


def test_users_register_their_own_tools_with_a_decorator() -> None:
    reg = ToolRegistry()

    class Args(BaseModel):
        city: str

    @reg.tool(Args, risk="read", trust="untrusted", timeout_s=5, max_result_chars=50)
    def weather(args: Args, ctx: ToolContext) -> str:
        """Weather of a city."""
        return f"sunny in {args.city}"

    spec = reg.get("weather")
    assert spec is not None and spec.trust == "untrusted" and spec.timeout_s == 5
    with pytest.raises(ValueError, match="already registered"):
        reg.tool(Args)(weather)
