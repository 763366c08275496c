"""A cancel reaches a run that is inside a long model call: the run ends at once as
`interrupted`, and what the abandoned call still returns is refused by the thread's
fence, so it never lands in the thread; the next run on the thread goes ahead."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import redis
from langgraph_sdk import get_sync_client

from graphwright.offline import OfflineChatModel
from graphwright.testing.kit import until
from graphwright.testing.service import Service, service_for
from graphwright.testing.until import scaled

GOAL = 'Schedule "Design review" on 2026-12-01 from 10:00 to 11:00.'


@pytest.fixture
def service(redis_url: str, prefix: str) -> Iterator[Service]:
    with service_for(
        redis_url, prefix, "tests.support.slow_graphs:register_all", model=OfflineChatModel()
    ) as svc:
        yield svc


@pytest.mark.parametrize("background", [True, False], ids=["worker", "api-process"])
def test_a_cancel_interrupts_a_run_inside_a_model_call(
    service: Service, prefix: str, client: redis.Redis, background: bool
) -> None:
    sdk = get_sync_client(url=service.url, api_key=None)
    tid = sdk.threads.create()["thread_id"]
    hold = f"{prefix}:slow:hold_answer"
    client.set(hold, 1)  # the final answer's model call waits until this is gone
    if background:
        run_id = sdk.runs.create(tid, "held_answer", input={"goal": GOAL})["run_id"]
    else:
        run_id = next(
            p
            for p in sdk.runs.stream(
                tid, "held_answer", input={"goal": GOAL}, on_disconnect="continue"
            )
            if p.event == "metadata"
        ).data["run_id"]
    until(
        lambda: client.get(f"{prefix}:slow:answering") == b"1", "the answer's model call to start"
    )
    sdk.runs.cancel(tid, run_id, wait=True, action="interrupt")
    assert client.exists(hold)  # the model call is still under way
    assert sdk.runs.get(tid, run_id)["status"] == "interrupted"
    client.delete(hold)  # the abandoned call returns now; its step must not land
    time.sleep(scaled(1.0))  # an absence: the time the abandoned step would take to land
    values = sdk.threads.get_state(tid)["values"]
    assert not values.get("answer") and values.get("stop_reason") is None
    assert client.hlen(service.orch.keys.calendar()) == 1  # the write before it stands, once
    assert sdk.threads.get(tid)["status"] == "interrupted"  # as the reference marks it
    again = sdk.runs.wait(tid, "held_answer", input=None)  # the thread is not stuck
    assert "Created 'Design review'" in again["answer"]
    assert client.hlen(service.orch.keys.calendar()) == 1
