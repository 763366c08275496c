"""What happens after a run ends.

Its webhook is handed to the background sender, and a stateless run's temporary thread is deleted
(unless it asked to `keep` it).
"""

from __future__ import annotations

import logging
from typing import Any

from graphwright.orchestrator import Orchestrator
from graphwright.server.records.run_steps import RunSteps
from graphwright.server.records.run_store import RunStore
from graphwright.server.runs.webhook_sender import SENDER
from graphwright.server.schemas.run_bodies import RunCreate
from graphwright.tools.runloop import call

log = logging.getLogger(__name__)
RECORD_TTL_S = 3600


def call_webhook(url: str, payload: dict[str, Any], allow: str = "") -> bool:
    """POST the run to `url` and wait for the outcome (True once it answers 2xx).

    As the background sender would send it; for a caller that wants the answer.
    """
    return call(SENDER.send(url, payload, allow), "call_webhook")


def kept_keys(orch: Orchestrator, store: RunStore, thread_id: str, run_id: str) -> tuple[str, ...]:
    """The keys of a stateless run that outlive its thread: for `wait` and `join`."""
    return (
        orch.keys.run_record(thread_id, run_id),
        orch.keys.thread_runs(thread_id),
        store.inflight(thread_id),
    )


async def drop_temporary_thread(
    orch: Orchestrator, store: RunStore, thread_id: str, run_id: str
) -> None:
    """Delete a stateless run's thread, before its end is recorded (a waiter finds it gone).

    Its run record stays (see `expire_kept`). On the run's loop, by its asyncio client.
    """
    keep = kept_keys(orch, store, thread_id, run_id)
    await orch.aclient.srem(orch.keys.registry(thread_id), *keep)
    await orch.asaver.adelete_thread(thread_id)
    await orch.aclient.delete(orch.keys.meta(thread_id))
    # as Orchestrator.delete: the search index forgets it too
    await orch.index.aforget(orch.aclient, [thread_id])


async def expire_kept(orch: Orchestrator, store: RunStore, thread_id: str, run_id: str) -> None:
    """A dropped thread's run record and lists expire within the run retention, when shorter.

    This applies after the end: the end sets the record's own expiry. One round trip.
    """
    pipe = orch.aclient.pipeline(transaction=False)
    for key in kept_keys(orch, store, thread_id, run_id):
        pipe.expire(key, min(RECORD_TTL_S, store.retention_s))
    await pipe.execute()


def webhooks_disabled(orch: Orchestrator) -> bool:
    """`http.disable_webhooks` in `langgraph.json`.

    Runs keep their webhook, which is never called (as the reference does).
    """
    return orch.project is not None and orch.project.config.http.disable_webhooks


async def after_run(
    orch: Orchestrator, steps: RunSteps, thread_id: str, run_id: str, raw: dict[str, str]
) -> None:
    """What follows a run's end (`raw`: its record as picked up).

    Its webhook, handed to the background sender (the run gives its job slot back without
    waiting for it), with the run as it ended; a stateless run's record and lists set to expire.
    """
    body = RunCreate.model_validate_json(raw["body"])
    if body.webhook and webhooks_disabled(orch):
        log.info("webhooks are off (http.disable_webhooks): run %s's is not called", run_id)
    elif body.webhook:
        ended = await steps.raw(thread_id, run_id)
        run = steps.store.to_run(ended).model_dump(mode="json")
        SENDER.submit(
            body.webhook, {**run, "values": ended.get("output")}, orch.settings.webhook_allow
        )
    if raw.get("stateless") == "delete":
        await expire_kept(orch, steps.store, thread_id, run_id)
