"""graphwright.Orchestrator: runs, resumes, inspection, harmless errors, the thread lock."""

from __future__ import annotations

import pytest

from graphwright import Orchestrator, RunResult
from graphwright.checkpoints.errors import RedisUnavailableError
from graphwright.checkpoints.server_check import server_info
from graphwright.locking import ThreadBusyError, thread_lock
from graphwright.nodes.gate_models import Approve, Edit, GateDecisionError, Reject, decide_all
from graphwright.offline import OfflineChatModel
from graphwright.settings import Settings
from graphwright_errors import UserError

EMAIL = 'Email li@example.com with the subject "Weekly report" saying the report is ready.'


def outbox(o: Orchestrator) -> list[bytes]:
    return o.client.lrange(o.keys.outbox(), 0, -1)


def test_an_unmarked_module_runs_on_redis(orch: Orchestrator) -> None:
    assert server_info(orch.client.info("server")).name == "redis"  # Valkey: modules marked so


def test_invoke_completes_with_answer_usage_and_steps(orch: Orchestrator) -> None:
    result = orch.invoke("agent", "订单 A1001 到哪了？")
    assert isinstance(result, RunResult)
    assert (result.status, result.stop_reason) == ("completed", "answered")
    assert "派送中" in (result.answer or "")
    assert (
        result.usage.model_calls == 3 and result.usage.tool_calls == 2 and result.usage.tokens > 0
    )
    assert result.steps > 0 and result.pending is None and result.error is None


def test_invoke_stops_at_the_gate_and_resume_approves_once(orch: Orchestrator) -> None:
    result = orch.invoke("agent", EMAIL, thread_id="mail-1")
    assert result.status == "interrupted" and result.pending is not None
    call = result.pending.calls[0]
    assert call.tool == "send_email" and call.args["to"] == "li@example.com"
    assert outbox(orch) == []
    done = orch.resume("mail-1", {call.id: Approve(digest=call.digest)})
    assert done.status == "completed" and "Weekly report" in (done.answer or "")
    assert len(outbox(orch)) == 1


def test_resume_errors_are_clear_and_change_nothing(orch: Orchestrator) -> None:
    with pytest.raises(UserError, match="no thread 'nope'"):
        orch.resume("nope")
    result = orch.invoke("agent", EMAIL, thread_id="mail-2")
    before = orch.state("mail-2")
    with pytest.raises(UserError, match="waiting at a gate; give a decision"):
        orch.resume("mail-2")
    with pytest.raises(GateDecisionError, match="made for other arguments"):
        orch.resume("mail-2", Approve(digest="ffffffffffffffff"))
    pending = result.pending
    assert pending is not None
    with pytest.raises(GateDecisionError, match="to: String should match pattern"):
        orch.resume(
            "mail-2",
            Edit(digest=pending.calls[0].digest, args={**pending.calls[0].args, "to": "nobody"}),
        )  # type: ignore[dict-item]
    after = orch.state("mail-2")
    assert after.checkpoint_id == before.checkpoint_id and after.pending == before.pending
    assert outbox(orch) == [] and orch.threads()[0].status == "interrupted"
    done = orch.resume("mail-2", decide_all(pending, "reject", reason="not now"))
    assert done.status == "completed" and "not now" in (done.answer or "")
    with pytest.raises(UserError, match="already finished"):
        orch.resume("mail-2", Reject(reason="again"))
    assert outbox(orch) == []


def test_bad_input_and_unknown_graph_are_user_errors(orch: Orchestrator) -> None:
    with pytest.raises(UserError, match="no graph named 'nope'; registered graphs: agent"):
        orch.invoke("nope", "hi")
    with pytest.raises(UserError, match="bad input: goal"):
        orch.invoke("agent", {"goal": ""})
    with pytest.raises(UserError, match="bad input: colour"):
        orch.invoke("agent", {"goal": "x", "colour": "red"})


def test_state_history_trace_threads_and_delete(orch: Orchestrator) -> None:
    orch.invoke("agent", "订单 A1002 发货了吗？", thread_id="o-1")
    state = orch.state("o-1")
    assert state.status == "completed" and state.next == []
    assert state.values["stop_reason"] == "answered"
    assert state.values["messages"][0]["type"] == "human"
    history = orch.history("o-1")
    assert [h.step for h in history] == sorted((h.step for h in history), reverse=True)
    assert history[0].node == ["plan"] and history[-1].source == "input"
    kinds = [e["kind"] for e in orch.trace("o-1")]
    assert kinds == ["run_start", "model_call", "tool_call", "model_call", "stop"]
    assert [(t.thread_id, t.graph, t.status) for t in orch.threads()] == [
        ("o-1", "agent", "completed")
    ]
    orch.delete("o-1")
    assert orch.threads() == []
    # Only the fence counter stays (for a while), so a reused id never restarts at token 1.
    left = list(orch.client.scan_iter(match=f"{orch.keys.prefix}:{{o-1}}*"))  # every node's
    assert left == [orch.keys.fence("o-1").encode()]
    with pytest.raises(UserError, match="no thread 'o-1'"):
        orch.state("o-1")


def test_a_second_run_on_a_busy_thread_is_refused(orch: Orchestrator) -> None:
    with (
        thread_lock(orch.client, orch.keys, "busy"),
        pytest.raises(ThreadBusyError, match="already running in another process"),
    ):
        orch.invoke("agent", "订单 A1001 到哪了？", thread_id="busy")
    assert orch.invoke("agent", "订单 A1001 到哪了？", thread_id="busy").status == "completed"


def test_a_new_run_on_a_thread_waiting_at_a_gate_is_refused(orch: Orchestrator) -> None:
    orch.invoke("agent", EMAIL, thread_id="g")
    with pytest.raises(UserError, match="waiting at a gate"):
        orch.invoke("agent", "订单 A1001 到哪了？", thread_id="g")


def test_stream_yields_steps_in_order_then_the_result(orch: Orchestrator) -> None:
    events = list(orch.stream("agent", "订单 A1001 到哪了？", thread_id="s"))
    assert [e.node for e in events if e.kind == "step"] == [
        "plan",
        "act",
        "observe",
        "plan",
        "act",
        "observe",
        "plan",
    ]
    assert events[-1].kind == "result" and events[-1].result is not None
    assert events[-1].result.status == "completed"


async def test_async_twins_match_the_sync_api(orch: Orchestrator) -> None:
    result = await orch.ainvoke("agent", EMAIL, thread_id="a")
    assert result.status == "interrupted" and result.pending is not None
    waiting = await orch.astate("a")  # read natively by the async saver: the same as the sync read
    assert waiting == orch.state("a") and waiting.pending == result.pending
    streamed = [e async for e in orch.astream_resume("a", decide_all(result.pending, "approve"))]
    assert streamed[-1].result is not None and streamed[-1].result.status == "completed"
    assert (await orch.astate("a")).status == "completed"
    assert await orch.ahistory("a") == orch.history("a")
    assert [t.thread_id for t in await orch.athreads()] == ["a"]
    assert "human_gate" in await orch.adraw("agent", "mermaid", "a")


def test_unreachable_redis_is_a_clear_infrastructure_error(prefix: str) -> None:
    # The message is the point here; the retry budget has its own tests (test_redis_blips).
    settings = Settings(
        _env_file=None,
        REDIS_URL="redis://:hunter2@127.0.0.1:1/0",  # type: ignore[call-arg]
        GRAPHWRIGHT_KEY_PREFIX=prefix,
        GRAPHWRIGHT_REDIS_RETRY_S="0.2",
    )
    with pytest.raises(RedisUnavailableError) as caught:  # a cluster client fails as it is built
        Orchestrator(settings=settings, model=OfflineChatModel()).invoke("agent", "hi")
    assert "hunter2" not in str(caught.value)


def test_a_worker_gate_surfaces_as_the_run_gate_naming_the_worker(orch: Orchestrator) -> None:
    goal = "订单 A1001 到哪了？帮我安排“设计评审”，2026-12-01 10:00-11:00。"
    result = orch.invoke("orchestrator", goal, thread_id="w")
    assert result.status == "interrupted" and result.pending is not None
    assert [(c.worker, c.tool) for c in result.pending.calls] == [("scheduler", "create_event")]
    done = orch.resume("w", decide_all(result.pending, "approve"))
    assert done.status == "completed"
    assert "[order_desk]" in (done.answer or "") and "[scheduler]" in (done.answer or "")


def test_an_orchestrator_closes_the_connections_it_opened(settings: Settings) -> None:
    """`with Orchestrator(...)` (or `close`) gives back its blocking and asyncio
    connections; a client the caller passed in stays the caller's, open."""
    import asyncio

    import redis as redis_py

    from graphwright.testing.until import until

    watcher = redis_py.Redis.from_url(settings.redis_url)

    def connected() -> set[str]:
        return {c["id"] for c in watcher.client_list()}

    before = connected()
    with Orchestrator(settings=settings, model=OfflineChatModel()) as orch:
        asyncio.run(
            orch.ainvoke("agent", "订单 A1001 到哪了？")
        )  # the run core's asyncio connections
        opened = connected() - before
        assert len(opened) >= 2, "the run opened a blocking and an asyncio connection"
    until(lambda: not opened & connected(), "the orchestrator's connections to close")
    passed = redis_py.Redis.from_url(settings.redis_url)
    Orchestrator(settings=settings, model=OfflineChatModel(), client=passed).close()
    assert passed.ping()
    watcher.close()
