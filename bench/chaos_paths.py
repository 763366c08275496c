"""The chaos campaign's server paths.

A run started through a worker's queue, a run executing in the API process (`serve` without
`--queue`), and a cron's run; each first process is SIGKILLed at the point's moment and a second
worker finishes what it left.

What the reviewer does next (approve, settle an unknown outcome) is the same for every path
(`bench.chaos_points.Reviewer.settle`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from typing import TYPE_CHECKING, Any

import httpx

from graphwright.server.background.cron_scheduler import run_id_of
from graphwright.server.records.cron_store import CronStore, iso, next_after
from graphwright.server.records.run_store import RunStore
from graphwright.server.schemas.run_bodies import RunCreate
from graphwright.testing.redis_servers import free_port
from graphwright.testing.until import until
from graphwright_errors import NotFoundError

if TYPE_CHECKING:
    from bench.chaos_points import Reviewer

GOAL = "book the Aurora room"
DEADLINE_S = 90.0
EVERY_SECOND = "* * * * * *"


def via_worker(r: Reviewer, at: float | None) -> bool:
    """A run on the queue, executed by worker A, killed at `at`; True if killed."""
    run = RunStore(r.orch.client, r.keys).create(
        r.point.thread, RunCreate(assistant_id=r.graph, input={"goal": GOAL}), queue=True
    )
    return _first_worker(r, run.run_id, at)


def via_cron(r: Reviewer, at: float | None) -> bool:
    """A cron on the point's thread with one due slot, fired and run by worker A (killed at `at`).

    The next worker takes the claim or the run over.
    """
    r.orch.create_thread(r.point.thread)
    now = time.time()
    slot = next_after(EVERY_SECOND, now)
    cron = CronStore(r.orch.client, r.keys).create(
        payload={"input": {"goal": GOAL}},
        schedule=EVERY_SECOND,
        assistant_id=r.graph,
        thread_id=r.point.thread,
        end_time=iso(slot),
        now=now,
    )
    return _first_worker(r, run_id_of(cron["cron_id"], slot), at)


def via_api(r: Reviewer, at: float | None) -> bool:
    """A `runs.wait` executed in the API process, which is killed at `at`.

    `at` is counted from its start, as a worker's is; a worker takes the run over once its lease
    runs out.
    """
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + (at if at is not None else DEADLINE_S)
    api = r.c.spawn(["serve", "--port", str(port)], r.env, r.effects / "api.out")
    try:
        until(lambda: _answers(url), "the API to start listening", 60, interval_s=0.05)
        if time.monotonic() < deadline:
            httpx.post(
                f"{url}/threads", json={"thread_id": r.point.thread}, timeout=30
            ).raise_for_status()
            body = {"assistant_id": r.graph, "input": {"goal": GOAL}}
            asking = threading.Thread(
                target=_post, daemon=True, args=(f"{url}/threads/{r.point.thread}/runs/wait", body)
            )
            asking.start()
            asking.join(max(0.0, deadline - time.monotonic()))
            if not asking.is_alive():
                return False  # the run ended before the kill moment
        os.kill(api.pid, signal.SIGKILL)
        api.join()
    finally:
        if api.is_alive():
            os.kill(api.pid, signal.SIGTERM)
            api.join()
    r.point.where = _where(r)
    runs = (
        RunStore(r.orch.client, r.keys).list(r.point.thread, 1)
        if r.orch.meta(r.point.thread)
        else []
    )
    if runs:
        _second_worker(r, runs[0].run_id)
    return True


def _first_worker(r: Reviewer, run_id: str, at: float | None) -> bool:
    first = r.c.spawn(["worker", "--name", "A"], r.env, r.effects / "workerA.out")
    deadline = time.monotonic() + (at if at is not None else DEADLINE_S)
    killed = False
    while not _ended(r, run_id):
        if time.monotonic() > deadline:
            os.kill(first.pid, signal.SIGKILL)
            first.join()
            killed = True
            break
        time.sleep(0.02)
    if not killed:
        os.kill(first.pid, signal.SIGTERM)
        first.join()
        return False
    r.point.where = _where(r)
    _second_worker(r, run_id)
    return True


def _second_worker(r: Reviewer, run_id: str) -> None:
    second = r.c.spawn(["worker", "--name", "B"], r.env, r.effects / "workerB.out")
    deadline = time.monotonic() + DEADLINE_S
    while not _ended(r, run_id) and time.monotonic() < deadline and second.is_alive():
        time.sleep(0.05)
    os.kill(second.pid, signal.SIGTERM)
    second.join()


def _ended(r: Reviewer, run_id: str) -> bool:
    try:
        return RunStore(r.orch.client, r.keys).get(r.point.thread, run_id).status not in (
            "pending",
            "running",
        )
    except NotFoundError:  # a cron's run not made yet
        return False


def _where(r: Reviewer) -> str:
    from bench.chaos_points import classify

    return classify(r)


def _answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/ok", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def _post(url: str, body: dict[str, Any]) -> None:
    with contextlib.suppress(httpx.HTTPError):  # the API process is killed under it
        httpx.post(url, json=body, timeout=DEADLINE_S)
