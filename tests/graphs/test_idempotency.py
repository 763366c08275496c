"""Idempotency records bind the arguments; a claim without a result is an unknown outcome."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
import redis
from pydantic import BaseModel

from graphwright.checkpoints.errors import LockLostError
from graphwright.checkpoints.keys import Keys
from graphwright.testing.until import scaled
from graphwright.tools.builtin import build_registry
from graphwright.tools.executor import Observation, ToolCall, ToolExecutor
from graphwright.tools.records import args_digest
from graphwright.tools.registry import ToolRegistry
from graphwright.tools.spec import ToolContext, ToolSpec

MAIL = {"to": "li@example.com", "subject": "Hi", "body": "once"}


class Args(BaseModel):
    n: int = 0


@pytest.fixture
def keys(prefix: str) -> Keys:
    return Keys(prefix=prefix)


def run(
    ex: ToolExecutor,
    name: str,
    args: Any,
    call_id: str = "c1",
    *,
    fence: int | None = None,
    retry: bool = False,
) -> Observation:
    return ex.execute(
        ToolCall(name=name, args=args, id=call_id), thread_id="t1", fence=fence, retry=retry
    )


def counting(**kw: Any) -> tuple[ToolRegistry, list[int]]:
    ran: list[int] = []

    def write(args: Args, ctx: ToolContext) -> str:
        ran.append(args.n)
        return f"wrote {args.n}"

    spec = ToolSpec(
        name="w", description="w", args_model=Args, func=kw.pop("func", write), risk="write", **kw
    )
    return ToolRegistry([spec]), ran


def test_same_key_other_arguments_is_a_conflict_not_a_replay(
    client: redis.Redis, keys: Keys
) -> None:
    reg, ran = counting()
    ex = ToolExecutor(reg, client, keys=keys)
    assert run(ex, "w", {"n": 1}).ok
    replay = run(ex, "w", {"n": 1})
    assert replay.replayed and replay.result == "wrote 1"
    other = run(ex, "w", {"n": 2})
    assert other.error is not None and other.error.type == "conflict"
    assert ran == [1]
    record = ex.records.get("t1", "c1")
    assert record["status"] == "done" and record["digest"] == args_digest("w", {"n": 1})
    assert record["key"] == "t1:c1"


def test_a_claim_without_result_is_unknown_and_never_rerun_by_itself(
    client: redis.Redis, keys: Keys
) -> None:
    reg, ran = counting()
    ex = ToolExecutor(reg, client, keys=keys)
    # A process claimed the call and died before recording what happened.
    ex.records.claim(
        "t1", "c1", tool="w", digest=args_digest("w", {"n": 1}), key="t1:c1", fence=None
    )
    for _ in range(2):
        obs = run(ex, "w", {"n": 1})
        assert obs.error is not None and obs.error.type == "outcome_unknown"
        assert obs.idempotency_key == "t1:c1" and "t1:c1" in obs.error.message
    assert ran == []
    retried = run(ex, "w", {"n": 1}, retry=True)  # the reviewer's retry, same key
    assert retried.ok and ran == [1]
    assert run(ex, "w", {"n": 1}).replayed and ran == [1]


def test_a_reviewer_marks_an_unknown_write_done(client: redis.Redis, keys: Keys) -> None:
    reg, ran = counting()
    ex = ToolExecutor(reg, client, keys=keys)
    ex.records.claim(
        "t1", "c1", tool="w", digest=args_digest("w", {"n": 1}), key="t1:c1", fence=None
    )
    done = ex.mark_done(ToolCall(name="w", args={"n": 1}, id="c1"), "it did happen", thread_id="t1")
    assert done.ok and done.result == "it did happen"
    replay = run(ex, "w", {"n": 1})
    assert replay.replayed and replay.result == "it did happen" and ran == []


def test_a_keyed_builtin_cut_off_after_its_effect_leaves_one_effect(
    client: redis.Redis, keys: Keys
) -> None:
    ex = ToolExecutor(build_registry(), client, keys=keys)
    spec = ex.registry.get("send_email")
    assert spec is not None and spec.keyed
    # The effect happened under the claim, then the process died before the record.
    ex.records.claim(
        "t1",
        "c1",
        tool="send_email",
        digest=args_digest("send_email", MAIL),
        key="t1:c1",
        fence=None,
    )
    ctx = ToolContext(
        thread_id="t1", tool_call_id="c1", idempotency_key="t1:c1", redis=client, keys=keys
    )
    spec.func(spec.args_model.model_validate(MAIL), ctx)
    assert client.llen(keys.outbox()) == 1
    again = run(ex, "send_email", MAIL)  # re-run under the same key: the outbox dedupes it
    assert again.ok and again.result == {"queued": "t1:c1", "to": "li@example.com"}
    assert client.llen(keys.outbox()) == 1
    other = run(ex, "send_email", MAIL, "c2")  # a different call is a different mail
    assert other.ok and client.llen(keys.outbox()) == 2


def test_a_timed_out_write_is_unknown_and_its_late_result_is_kept(
    client: redis.Redis, keys: Keys
) -> None:
    release, finished = threading.Event(), threading.Event()

    def slow(args: Args, ctx: ToolContext) -> str:
        release.wait(10)
        return "late but done"

    reg, _ = counting(func=slow, timeout_s=0.2)
    ex = ToolExecutor(reg, client, keys=keys)
    obs = run(ex, "w", {"n": 1})
    assert obs.error is not None and obs.error.type == "outcome_unknown"
    assert ex.records.get("t1", "c1")["status"] == "unknown"
    ex._writes.submit(finished.set)  # queued behind the slow write: runs after its callback
    release.set()
    assert finished.wait(scaled(10))
    deadline = time.monotonic() + scaled(10)
    while ex.records.get("t1", "c1")["status"] != "done":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert run(ex, "w", {"n": 1}).result == "late but done"


def test_writes_never_queue_behind_hung_reads_and_queue_time_is_not_timed(
    client: redis.Redis, keys: Keys
) -> None:
    release = threading.Event()
    hung = ToolSpec(
        name="hung",
        description="r",
        args_model=Args,
        func=lambda a, c: release.wait(10),
        timeout_s=30,
    )
    quick = ToolSpec(
        name="quick", description="r", args_model=Args, func=lambda a, c: "ok", timeout_s=0.3
    )
    write = ToolSpec(
        name="w",
        description="w",
        args_model=Args,
        func=lambda a, c: "wrote",
        risk="write",
        timeout_s=0.3,
    )
    ex = ToolExecutor(ToolRegistry([hung, quick, write]), client, keys=keys, max_workers=1)
    blocker = threading.Thread(target=run, args=(ex, "hung", {}, "r1"))
    blocker.start()
    assert run(ex, "w", {}, "w1").ok  # its own pool: the hung read does not hold it up
    results: list[Observation] = []
    queued = threading.Thread(target=lambda: results.append(run(ex, "quick", {}, "r2")))
    queued.start()
    time.sleep(0.5)  # the queued read waits longer than its timeout before it can start
    release.set()
    queued.join(scaled(10))
    blocker.join(scaled(10))
    assert results[0].ok, results[0].error


def test_a_stale_fence_can_neither_claim_nor_record(client: redis.Redis, keys: Keys) -> None:
    reg, ran = counting()
    ex = ToolExecutor(reg, client, keys=keys)
    client.set(keys.fence("t1"), 7)
    assert run(ex, "w", {"n": 1}, "c1", fence=7).ok
    with pytest.raises(LockLostError, match="newer run"):
        run(ex, "w", {"n": 2}, "c2", fence=6)
    assert ran == [1]
