"""Crons that never stop: a body is checked at create and update as at fire time, a cron
that fails at fire time is recorded and skipped, and a slot raced by two schedulers makes
one run."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from graphwright import Orchestrator
from graphwright.offline import OfflineChatModel
from graphwright.server.background.cron_runs import fire_for
from graphwright.server.background.cron_scheduler import CronScheduler, run_id_of
from graphwright.server.records.cron_store import CronStore
from graphwright.server.records.run_store import RunStore
from graphwright.settings import Settings
from graphwright.testing.service import Service, running

EVERY_SECOND = "* * * * * *"


@pytest.fixture
def service(settings: Settings) -> Iterator[Service]:
    with running(Orchestrator(settings=settings, model=OfflineChatModel()), worker=False) as svc:
        yield svc


def _cron(service: Service, **body: Any) -> httpx.Response:
    return httpx.post(
        f"{service.url}/runs/crons",
        json={"assistant_id": "agent", "schedule": EVERY_SECOND, **body},
    )


def _runs_of(service: Service, cron_id: str) -> int:
    runs = RunStore(service.orch.client, service.orch.keys)
    return sum(
        1
        for t in service.orch.threads()
        if (service.orch.meta(t.thread_id).get("metadata") or "").find(cron_id) >= 0
        and runs.list(t.thread_id)
    )


def test_a_body_that_would_fail_at_fire_time_is_refused_at_create_and_update(
    service: Service,
) -> None:
    bad = _cron(service, input={"goal": "hi"}, stream_mode="bogus")
    assert bad.status_code == 422 and "stream_mode" in bad.text
    good = _cron(service, input={"goal": "hi"})
    assert good.status_code == 200, good.text
    cron_id = good.json()["cron_id"]
    patched = httpx.patch(f"{service.url}/runs/crons/{cron_id}", json={"stream_mode": "bogus"})
    assert patched.status_code == 422
    assert (
        httpx.get(f"{service.url}/runs/crons/{cron_id}").json()["payload"].get("stream_mode")
        is None
    )


def test_a_cron_failing_at_fire_time_is_recorded_and_the_scheduler_goes_on(
    service: Service,
) -> None:
    orch = service.orch
    crons = CronStore(orch.client, orch.keys)
    bogus = _cron(service, input={"goal": "hi"}).json()
    # A document written before create checked it: the run it starts cannot validate.
    doc = crons.find(bogus["cron_id"])
    assert doc is not None
    doc["payload"]["stream_mode"] = "bogus"
    orch.client.hset(orch.keys.crons(), bogus["cron_id"], json.dumps(doc))
    valid = _cron(service, input={"goal": "hi"}).json()
    scheduler = CronScheduler(orch.client, orch.keys, fire_for(orch), interval_s=0.2)
    loop = scheduler.start()
    try:
        deadline = time.monotonic() + 20
        while _runs_of(service, valid["cron_id"]) < 3 or "last_error" not in crons.get(
            bogus["cron_id"]
        ):
            assert time.monotonic() < deadline, "the valid cron stopped firing"
            assert loop.is_alive(), "the scheduler died"
            time.sleep(0.1)
    finally:
        scheduler.stop.set()
        loop.join(timeout=10)
    error = crons.get(bogus["cron_id"])["last_error"]
    assert "stream_mode" in error["error"] and error["slot"]
    assert _runs_of(service, bogus["cron_id"]) == 0


@pytest.mark.parametrize("on_thread", [False, True])
def test_two_schedulers_racing_one_slot_make_one_run(service: Service, on_thread: bool) -> None:
    """The first claimer is still enqueueing when a second takes the claim over (its lease
    ran out): both fire the same slot at once, and the run is made and queued once."""
    orch = service.orch
    fire = fire_for(orch)
    thread = (
        httpx.post(f"{service.url}/threads", json={}).json()["thread_id"] if on_thread else None
    )
    made = httpx.post(
        f"{service.url}/threads/{thread}/runs/crons" if thread else f"{service.url}/runs/crons",
        json={"assistant_id": "agent", "schedule": EVERY_SECOND, "input": {"goal": "hi"}},
    )
    cron = CronStore(orch.client, orch.keys).get(made.json()["cron_id"])
    before = int(orch.client.xlen(orch.keys.queue()))
    slots = range(1000, 1010)
    failures: list[BaseException] = []
    for slot in slots:
        gate = threading.Barrier(2)

        def race(
            run_id: str = run_id_of(cron["cron_id"], slot), gate: threading.Barrier = gate
        ) -> None:
            gate.wait()
            try:
                fire(cron, run_id, thread)
            except Exception as exc:  # the test fails on it below, with the error
                failures.append(exc)

        racers = [threading.Thread(target=race) for _ in range(2)]
        for r in racers:
            r.start()
        for r in racers:
            r.join(timeout=30)
    assert failures == []
    runs = RunStore(orch.client, orch.keys)
    for slot in slots:
        run_id = run_id_of(cron["cron_id"], slot)
        assert runs.get(thread or run_id, run_id).status == "pending"
    assert int(orch.client.xlen(orch.keys.queue())) - before == len(slots)  # each queued once
