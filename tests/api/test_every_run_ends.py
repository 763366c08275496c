"""Every run ends: a run taken over before its first checkpoint, a run that fails before its
graph starts, callers cancelled around the lock, Redis refusing writes under a worker, pending
runs cancelled, a cron after an outage, a long sweep and a thread's many runs listed."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from langgraph_sdk import get_sync_client

from graphwright import Orchestrator
from graphwright.aconnect import batch
from graphwright.checkpoints.errors import LockLostError
from graphwright.checkpoints.keys import Keys
from graphwright.graphs.context import Graph, GraphContext
from graphwright.server.background.cron_scheduler import CronScheduler, run_id_of
from graphwright.server.background.worker import Worker
from graphwright.server.records.cron_store import CronStore
from graphwright.server.records.event_log import stream_key
from graphwright.server.records.run_store import TERMINAL, RunStore, member
from graphwright.server.runs.execution import Executor
from graphwright.server.schemas.run_bodies import RunCreate
from graphwright.testing.service import running
from graphwright.testing.until import scaled, until
from graphwright.tools.runloop import call, hand

FIRST = "What is 2 + 3?"
SECOND = "And what is 7 * 6?"


def cut_before_first_checkpoint(
    orch: Orchestrator, store: RunStore, tid: str, goal: str, durability: Any = None
) -> str:
    """A run as a worker cut from Redis between `run_start` and its first checkpoint leaves
    it: recorded running, owned by the cut worker, the thread marked running, no checkpoint."""
    body = RunCreate(assistant_id="agent", input={"goal": goal}, durability=durability)
    run = store.create(tid, body, queue=False)
    store.update(tid, run.run_id, status="running", started="1", owner="cut-worker")
    orch.thread_meta.write(tid, None, graph="agent", status="running", thread_id=tid)
    orch.tracer.emit(tid, "run_start", run_id=run.run_id, graph="agent", input={"goal": goal})
    return run.run_id


def asked(orch: Orchestrator, tid: str) -> list[str]:
    """What the user asked on the thread, in order, as its checkpointed state holds it."""
    values: dict[str, Any] = orch.snapshot(tid).values
    return [str(m.content) for m in values.get("messages", []) if m.type == "human"]


def test_a_run_taken_over_before_its_first_checkpoint_runs_with_its_input(
    orch: Orchestrator,
) -> None:
    store = RunStore.of(orch)
    tid = orch.create_thread("cut-first", {})
    run_id = cut_before_first_checkpoint(orch, store, tid, FIRST)
    assert Executor(orch, store).run(tid, run_id) == "done"
    run = store.raw(tid, run_id)
    assert run["status"] == "success", run.get("error")  # not EmptyInputError
    assert any(FIRST in text for text in asked(orch, tid))


def test_a_follow_up_taken_over_before_its_first_checkpoint_answers_the_new_message(
    orch: Orchestrator,
) -> None:
    store = RunStore.of(orch)
    tid = orch.create_thread("cut-follow-up", {})
    first = store.create(tid, RunCreate(assistant_id="agent", input={"goal": FIRST}), queue=False)
    assert Executor(orch, store).run(tid, first.run_id) == "done"
    run_id = cut_before_first_checkpoint(orch, store, tid, SECOND)
    assert Executor(orch, store).run(tid, run_id) == "done"
    assert store.raw(tid, run_id)["status"] == "success"
    said = asked(orch, tid)
    assert any(SECOND in text for text in said), json.dumps(said)  # not ended without it


def test_a_run_saving_only_at_its_exit_is_not_run_again_from_its_input(orch: Orchestrator) -> None:
    store = RunStore.of(orch)
    tid = orch.create_thread("cut-exit", {})
    first = store.create(tid, RunCreate(assistant_id="agent", input={"goal": FIRST}), queue=False)
    assert Executor(orch, store).run(tid, first.run_id) == "done"
    # Nothing tells whether its nodes ran (and a tool took effect) before the cut: it may not
    # run again, so it continues from the thread's head as before (at most once).
    run_id = cut_before_first_checkpoint(orch, store, tid, SECOND, durability="exit")
    assert Executor(orch, store).run(tid, run_id) == "done"
    assert not any(SECOND in text for text in asked(orch, tid))


@pytest.fixture
def worker(orch: Orchestrator) -> Iterator[Worker]:
    """A worker consuming the test's queue on a thread of its own."""
    consumer = Worker(orch, name="w-ends", claim_idle_ms=60_000, block_ms=100, grace_s=2)
    thread = threading.Thread(target=consumer.run_forever, daemon=True)
    thread.start()
    yield consumer
    consumer.stop.set()
    thread.join(timeout=scaled(10))


def refuses(ctx: GraphContext) -> Graph:
    raise RuntimeError("the factory cannot build this graph")


def flavoured(ctx: GraphContext) -> Graph:
    flavour = (ctx.configurable or {}).get("flavour")
    if flavour != "plain":
        raise ValueError(f"no flavour {flavour!r}; configurable.flavour must be 'plain'")
    raise AssertionError("not run in this test")


def ended(store: RunStore, tid: str, run_id: str) -> dict[str, str]:
    """The run's record once it has ended (the test fails if it never does)."""

    def done() -> dict[str, str]:
        record = store.raw(tid, run_id)
        return record if record["status"] in TERMINAL else {}

    return until(done, f"run {run_id} to end", 10)


@pytest.mark.parametrize(
    ("graph", "config", "reason"),
    [
        ("only-elsewhere", None, "no graph named 'only-elsewhere'"),
        ("refuses", None, "the factory cannot build this graph"),
        ("flavoured", {"configurable": {"flavour": "spicy"}}, "no flavour 'spicy'"),
    ],
    ids=["unknown-graph", "factory-raises", "bad-config"],
)
def test_a_run_that_fails_before_its_graph_starts_ends_in_error_and_frees_its_thread(
    orch: Orchestrator, worker: Worker, graph: str, config: dict[str, Any] | None, reason: str
) -> None:
    orch.graphs.register("refuses", refuses, per_config=True)
    orch.graphs.register("flavoured", flavoured, per_config=True)
    store = worker.store
    tid = orch.create_thread(f"early-{graph}", {})
    run = store.create(tid, RunCreate(assistant_id=graph, config=config), queue=True)
    record = ended(store, tid, run.run_id)
    assert record["status"] == "error" and reason in record["error"]
    events: Any = orch.client.xrange(stream_key(orch.keys, tid, run.run_id))
    assert [f[b"event"] for _, f in events].count(b"error") == 1  # ended once, said once
    ends: Any = orch.client.xrange(orch.keys.run_end(tid, run.run_id))
    assert len(ends) == 1
    assert orch.client.get(orch.keys.lock(tid)) is None and not store.active(tid)
    nxt = store.create(tid, RunCreate(assistant_id="agent", input={"goal": FIRST}), queue=True)
    assert ended(store, tid, nxt.run_id)["status"] == "success"  # the thread takes new runs


async def test_cancelled_and_timed_out_callers_leave_no_lock_behind(orch: Orchestrator) -> None:
    rng = random.Random(35)
    threads = [f"cancelled-{i}" for i in range(16)]
    for tid in threads[:15]:  # each caller gives up at a drawn moment: taking the lock or later
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(
                orch.ainvoke("agent", FIRST, thread_id=tid), timeout=rng.uniform(0, 0.05)
            )
    # One given up for sure while its lock is being taken: Redis holds writes back meanwhile.
    orch.client.client_pause(300, all=False)  # writes only
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(orch.ainvoke("agent", FIRST, thread_id=threads[15]), timeout=0.1)
    await asyncio.to_thread(orch.client.set, f"{orch.keys.prefix}:probe", 1)  # after the pause
    locks = [orch.keys.lock(tid) for tid in threads]
    await asyncio.to_thread(
        until,
        lambda: not any(orch.client.get(k) for k in locks),
        "the cancelled callers' locks to be given back",
        5,
    )

    async def take_and_give_back(tid: str) -> None:
        async with orch.lifecycle.lock(tid):
            pass

    for tid in threads:  # each thread can be taken again, not ThreadBusyError
        await hand(take_and_give_back(tid))


async def test_a_caller_cancelled_while_a_new_threads_lock_is_taken_leaves_no_lock(
    orch: Orchestrator,
) -> None:
    """A run on a new thread sends its start with its lock's acquisition; given up there, it
    gives the lock back all the same (the thread then reads as a run that stopped, as after a
    crash)."""
    orch.client.client_pause(300, all=False)  # writes only: the acquisition waits
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(orch.ainvoke("agent", FIRST), timeout=0.1)
    await asyncio.to_thread(orch.client.set, f"{orch.keys.prefix}:probe", 1)  # after the pause

    def no_lock() -> bool:
        return not list(orch.client.scan_iter(match=f"{orch.keys.prefix}:*:lock"))

    await asyncio.to_thread(until, no_lock, "the given-up run's lock to be given back", 5)


def test_a_start_sent_with_a_lock_another_holds_writes_nothing(orch: Orchestrator) -> None:
    if orch.run_writes.cluster:
        pytest.skip("a cluster's start is written after its lock is taken")
    tid = "owned-elsewhere"
    orch.client.set(orch.keys.lock(tid), json.dumps({"id": "another", "fence": 1}))
    start = orch.run_record.start_with_lock("agent", tid, "0" * 32, {"goal": FIRST}, "mine")
    (reply,) = call(batch(orch.aclient, [start]))
    with pytest.raises(LockLostError, match="held by a newer run"):
        orch.run_writes.written(tid, reply)
    assert orch.client.exists(orch.keys.meta(tid), orch.keys.events(tid)) == 0


def oom_errors(orch: Orchestrator) -> int:
    """How many commands Redis has refused for want of memory."""
    stats: Any = orch.client.info("errorstats")
    return int(stats.get("errorstat_OOM", {}).get("count", 0))


def test_a_worker_survives_redis_out_of_memory_and_takes_runs_once_it_is_freed(
    orch: Orchestrator,
) -> None:
    consumer = Worker(orch, name="w-oom", claim_idle_ms=60_000, block_ms=100, grace_s=2)
    consumer.store.claim_window_s = 0.5  # it sweeps (a write) every quarter second
    serving = threading.Thread(target=consumer.run_forever, daemon=True)
    serving.start()
    try:
        tid = orch.create_thread("after-oom", {})
        before = oom_errors(orch)
        # Due while Redis refuses every write: the worker's own writes, and this run's, are
        # refused (its queueing, its lock, its entry's settling).
        run = consumer.store.create(
            tid, RunCreate(assistant_id="agent", input={"goal": FIRST}), queue=True, delay_s=0.3
        )
        config: Any = orch.client.config_get("maxmemory*")
        assert config["maxmemory-policy"] == "noeviction"  # refused, never evicted
        orch.client.config_set("maxmemory", "1")
        try:
            until(lambda: oom_errors(orch) > before + 3, "the worker to meet OutOfMemoryError", 10)
        finally:
            orch.client.config_set("maxmemory", config["maxmemory"])
        assert serving.is_alive()
        assert ended(consumer.store, tid, run.run_id)["status"] == "success"
    finally:
        consumer.stop.set()
        serving.join(timeout=scaled(10))


def test_runs_cancelled_while_pending_expire_and_leave_with_their_thread(
    orch: Orchestrator,
) -> None:
    store = RunStore.of(orch)
    with running(orch, worker=False) as svc:
        sdk = get_sync_client(url=svc.url, api_key=None)
        tid = sdk.threads.create()["thread_id"]

        def later(strategy: Any = "enqueue") -> Any:  # pending, ten minutes off
            return sdk.runs.create(
                tid, "agent", input={"goal": FIRST}, after_seconds=600, multitask_strategy=strategy
            )

        cancelled = later()
        sdk.runs.cancel(tid, cancelled["run_id"])
        replaced = later()
        later("interrupt")  # cancels the pending one before it
        left = later()
        for run in (cancelled, replaced):
            assert store.get(tid, run["run_id"]).status == "interrupted"
            record = orch.keys.run_record(tid, run["run_id"])
            assert 0 < orch.client.ttl(record) <= store.retention_s  # not kept for ever
            assert orch.client.zscore(store.delayed(), member(tid, run["run_id"])) is None
        sdk.threads.delete(tid)
        delayed: Any = orch.client.zrange(store.delayed(), 0, -1)
        assert not [m for m in delayed if tid in m.decode()], left["run_id"]  # none of its runs


def test_after_an_outage_a_cron_fires_once_not_once_per_missed_slot(
    client: redis.Redis, prefix: str
) -> None:
    keys = Keys(prefix=prefix)
    fired: list[str] = []
    cron = CronStore(client, keys).create(
        payload={"input": {}}, schedule="* * * * * *", assistant_id="agent", now=1000
    )
    scheduler = CronScheduler(client, keys, lambda c, run_id, t: fired.append(run_id))
    for _ in range(3):  # every scheduler was down from 1000 to 1012: twelve slots missed
        scheduler.tick(1012)
    assert fired == [run_id_of(cron["cron_id"], 1001)]  # once, as the reference
    assert client.zscore(keys.cron_due(), cron["cron_id"]) == 1013  # on schedule again
    scheduler.tick(1013)
    assert fired[1:] == [run_id_of(cron["cron_id"], 1013)]


def test_a_long_sweep_does_not_hold_back_the_runs_a_worker_takes(orch: Orchestrator) -> None:
    store = RunStore.of(orch)
    with orch.client.pipeline(transaction=False) as pipe:  # a sweep of many threads is long
        for i in range(0, 10_000, 1_000):
            pipe.zadd(orch.keys.threads(), {f"idle-{j}": 1 for j in range(i, i + 1_000)})
        pipe.execute()
    orphan_tid = orch.create_thread("orphan", {})  # a run nobody holds: the sweep's to requeue
    orphan = store.create(
        orphan_tid, RunCreate(assistant_id="agent", input={"goal": FIRST}), queue=False
    )
    orch.client.hset(
        orch.keys.run_record(orphan_tid, orphan.run_id), "updated_at", str(time.time() - 3_600)
    )
    tid = orch.create_thread("queued", {})
    run = store.create(tid, RunCreate(assistant_id="agent", input={"goal": FIRST}), queue=True)
    consumer = Worker(orch, name="w-sweep", claim_idle_ms=60_000, block_ms=100, grace_s=2)
    serving = threading.Thread(target=consumer.run_forever, daemon=True)
    serving.start()
    try:
        until(lambda: store.get(tid, run.run_id).status != "pending", "the queued run to start", 10)
        # Taken while the sweep, which requeues the orphan only once it has read every
        # thread, is still going: the orphan is not back on the queue yet.
        assert orch.client.zscore(store.delayed(), member(orphan_tid, orphan.run_id)) is None
        assert store.get(orphan_tid, orphan.run_id).status == "pending"
        ended(store, orphan_tid, orphan.run_id)  # and the sweep does requeue it
    finally:
        consumer.stop.set()
        serving.join(timeout=scaled(10))


def calls(orch: Orchestrator, command: str) -> int:
    """How many times the server has run `command`."""
    stats: Any = orch.client.info("commandstats")
    return int(stats.get(f"cmdstat_{command}", {}).get("calls", 0))


def test_a_run_is_held_by_the_replicas_before_its_creation_is_answered(
    orch: Orchestrator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRAPHWRIGHT_WAIT_REPLICAS", "1")
    monkeypatch.setenv("GRAPHWRIGHT_WAIT_TIMEOUT_MS", "1")  # this server has none: do not wait
    store = RunStore.of(orch)
    tid = orch.create_thread("replicated", {})
    before = calls(orch, "wait")
    store.create(tid, RunCreate(assistant_id="agent", input={"goal": FIRST}), queue=True)
    assert calls(orch, "wait") == before + 1  # its input is not lost to a failover after it


def test_listing_a_threads_runs_reads_only_the_page_asked_for(orch: Orchestrator) -> None:
    store = RunStore.of(orch)
    tid = orch.create_thread("many-runs", {})
    body = RunCreate(assistant_id="agent", input={"goal": FIRST}, multitask_strategy="enqueue")
    made = [store.create(tid, body, queue=False).run_id for _ in range(40)]
    store.cancel(tid, made[-1])  # the newest is interrupted, the others pending
    newest_first = made[::-1]
    before = calls(orch, "hgetall")
    page = store.list(tid, limit=3, offset=2)
    assert calls(orch, "hgetall") - before <= 3  # not one read per run of the thread
    assert [r.run_id for r in page] == newest_first[2:5]
    pending = store.list(tid, limit=2, offset=1, status="pending")
    assert [r.run_id for r in pending] == newest_first[2:4]
    assert [r.run_id for r in store.list(tid, limit=5, status="interrupted")] == made[-1:]
