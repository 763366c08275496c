"""Cron documents and the scheduler's claim: each due slot goes to exactly one scheduler."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from graphwright.checkpoints.keys import Keys
from graphwright.server.background.cron_runs import takeover_lease_s
from graphwright.server.background.cron_scheduler import CronScheduler, run_id_of
from graphwright.server.records.cron_store import (
    CronStore,
    InvalidScheduleError,
    check_schedule,
    iso,
    next_after,
)


def test_schedules_with_seconds_and_timezones() -> None:
    assert next_after("* * * * * */2", 100) == 102  # six fields: seconds last
    assert next_after("0 12 * * *", 0, "Europe/Paris") == 11 * 3600  # noon in Paris is 11:00 UTC
    with pytest.raises(InvalidScheduleError):
        check_schedule("every minute")


def test_each_slot_is_fired_once_by_competing_schedulers(client: redis.Redis, prefix: str) -> None:
    keys = Keys(prefix=prefix)
    fired: list[tuple[str, str | None]] = []

    def fire(cron: dict[str, Any], run_id: str, thread_id: str | None) -> None:
        fired.append((run_id, thread_id))

    crons = CronStore(client, keys)
    cron = crons.create(
        payload={"input": {}},
        schedule="* * * * * *",
        assistant_id="a",
        end_time=iso(1010),
        now=1000,
    )
    assert cron["next_run_date"] == iso(1001) and cron["on_run_completed"] == "delete"
    schedulers = [CronScheduler(client, keys, fire) for _ in range(3)]
    for now in range(1000, 1015):
        for s in schedulers:
            s.tick(now)  # the claim compares and sets the slot's score
    slots = [run_id_of(cron["cron_id"], t) for t in range(1001, 1011)]
    assert [r for r, _ in fired] == slots  # every slot once, none after end_time
    assert client.zscore(keys.cron_due(), cron["cron_id"]) is None  # ended: no longer due


def test_a_claim_whose_scheduler_died_is_taken_over(client: redis.Redis, prefix: str) -> None:
    keys = Keys(prefix=prefix)
    crons = CronStore(client, keys)
    cron = crons.create(
        payload={},
        schedule="* * * * * *",
        assistant_id="a",
        thread_id="t",
        end_time=iso(1001),
        now=1000,
    )

    def die(cron: dict[str, Any], run_id: str, thread_id: str | None) -> None:
        raise KeyboardInterrupt  # the process stops between the claim and the enqueue

    with pytest.raises(KeyboardInterrupt):
        CronScheduler(client, keys, die).tick(1001)
    fired: list[str] = []
    heir = CronScheduler(client, keys, lambda c, r, t: fired.append(r), lease_s=0)
    assert heir.tick(1002) == 1 and fired == [run_id_of(cron["cron_id"], 1001)]
    assert heir.tick(1003) == 0 and client.zcard(keys.cron_firing()) == 0


def test_update_and_search(client: redis.Redis, prefix: str) -> None:
    crons = CronStore(client, Keys(prefix=prefix))
    a = crons.create(payload={}, schedule="0 * * * *", assistant_id="x", metadata={"k": 1})
    crons.create(payload={}, schedule="0 * * * *", assistant_id="y", thread_id="t")
    assert [c["cron_id"] for c in crons.search(assistant_id="x")] == [a["cron_id"]]
    assert crons.count(thread_id="t") == 1 and crons.count(metadata={"k": 1}) == 1
    off = crons.update(a["cron_id"], {"enabled": False, "input": {"goal": "g"}})
    assert client.zscore(Keys(prefix=prefix).cron_due(), a["cron_id"]) is None  # disabled: not due
    assert off["payload"]["input"] == {"goal": "g"}
    assert crons.search(enabled=False)[0]["cron_id"] == a["cron_id"]
    crons.delete(a["cron_id"])
    assert crons.count() == 1


def test_a_claim_is_never_taken_over_while_its_claimer_may_still_be_retrying() -> None:
    assert takeover_lease_s(2.0, 15.0) == 16.0  # the chaos campaign's setting: raised
    assert takeover_lease_s(60.0, 15.0) == 60.0  # the default: kept
    assert takeover_lease_s(0.5, 0.0) == 1.0
