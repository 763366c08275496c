"""Writes outside the graph refuse a stale fence: an executor (or a CLI run) that wakes up
after another process took its thread over changes no meta, run record, memory or event;
and a state update never lands in the middle of a run (409)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client

from graphwright import Orchestrator
from graphwright.checkpoints.errors import LockLostError
from graphwright.locking import ThreadLock, thread_lock
from graphwright.offline import OfflineChatModel
from graphwright.run_context import Run
from graphwright.server.records.run_store import RunStore
from graphwright.server.runs.execution import Executor, Prepared
from graphwright.server.schemas.run_bodies import RunCreate
from graphwright.settings import Settings
from graphwright.testing.service import Service, running
from graphwright.tools.runloop import call

ORDER = "订单 A1001 到哪了？"


@pytest.fixture
def service(settings: Settings) -> Iterator[Service]:
    with running(Orchestrator(settings=settings, model=OfflineChatModel()), worker=False) as svc:
        yield svc


def _taken_over(orch: Orchestrator, thread_id: str) -> int:
    """The fence of a holder whose lock expired and was taken: older than the current one."""
    with thread_lock(orch.client, orch.keys, thread_id) as stale:
        orch.client.delete(orch.keys.lock(thread_id))  # its expiry, while it was frozen
    with thread_lock(orch.client, orch.keys, thread_id):
        pass  # the successor's acquisition moves the fence on
    return stale.fence


def _everything(orch: Orchestrator, thread_id: str, run_id: str) -> dict[str, Any]:
    meta = orch.meta(thread_id)
    meta.pop("updated_at", None)
    return {
        "meta": meta,
        "record": RunStore(orch.client, orch.keys).raw(thread_id, run_id),
        "trace": orch.trace(thread_id),
        "memories": [m.model_dump() for m in orch.memories("ada")],
    }


def test_a_frozen_executor_woken_after_a_takeover_changes_nothing(service: Service) -> None:
    orch = service.orch
    sdk = get_sync_client(url=service.url, api_key=None)
    tid = sdk.threads.create()["thread_id"]
    run = sdk.runs.create(tid, "agent", input={"goal": ORDER})
    store = RunStore(orch.client, orch.keys)
    stale = _taken_over(orch, tid)
    assert Executor(orch, store, owner="successor").run(tid, run["run_id"]) == "done"
    assert store.get(tid, run["run_id"]).status == "success"
    # A note to remember, as a run's recall leaves it: the stale executor must not act on it.
    call(orch.user_memory.anote(tid, "ada", [{"id": "m1", "text": "I prefer tea"}]))
    before = _everything(orch, tid, run["run_id"])
    frozen = Executor(orch, store, owner="frozen")
    spec = orch.graphs.get("agent")
    raw = store.raw(tid, run["run_id"])
    woken = Run(
        thread_id=tid,
        run_id=run["run_id"],
        spec=spec,
        graph=orch.compiled(spec.name),
        config={},
        lock=ThreadLock(tid, stale, "frozen-lock"),
    )
    ready = Prepared(
        run=woken,
        body=RunCreate.model_validate_json(raw["body"]),
        payload=None,
        meta=orch.meta(tid),
        raw=raw,
        noted=True,
    )
    with pytest.raises(LockLostError):
        call(frozen.finish(ready, RuntimeError("woke up"), None, None, None))
    with pytest.raises(LockLostError):
        call(orch.user_memory.aremember(tid, run["run_id"], stale))
    with pytest.raises(LockLostError):
        store.update(tid, run["run_id"], stale, output="{}")
    assert _everything(orch, tid, run["run_id"]) == before


def test_a_cli_run_that_lost_its_thread_writes_no_start(service: Service) -> None:
    orch = service.orch
    orch.invoke("agent", ORDER, thread_id="cli")
    stale = _taken_over(orch, "cli")
    meta, trace = orch.meta("cli"), orch.trace("cli")
    with pytest.raises(LockLostError):
        call(orch.run_record.astart("agent", "cli", "0" * 32, None, stale))
    end = ThreadLock("cli", stale, "stale-lock")  # its end, which also gives the lock back
    with pytest.raises(LockLostError):
        call(orch.run_writes.write("cli", stale, {"status": "completed"}, release=end))
    assert orch.meta("cli") == meta and orch.trace("cli") == trace


def test_update_state_on_a_busy_thread_is_409_and_changes_nothing(service: Service) -> None:
    orch = service.orch
    orch.invoke("agent", ORDER, thread_id="busy")
    head = orch.state("busy").checkpoint_id
    with thread_lock(orch.client, orch.keys, "busy"):  # a run holds the thread
        answer = httpx.post(f"{service.url}/threads/busy/state", json={"values": {"goal": "x"}})
    assert answer.status_code == 409, answer.text
    assert orch.state("busy").checkpoint_id == head and orch.meta("busy")["status"] == "completed"
    done = httpx.post(f"{service.url}/threads/busy/state", json={"values": {"goal": "x"}})
    assert done.status_code == 200 and "gw_fence" not in done.json()["configurable"]
