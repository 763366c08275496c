"""What happens after a run ends.

Its webhook is called, and a stateless run's temporary thread is deleted (unless it asked to `keep`
it).
"""

from __future__ import annotations

import logging
import time
from typing import Any

import httpx

from graphwright.orchestrator import Orchestrator
from graphwright.server import webhooks
from graphwright.server.runs import RunStore
from graphwright.server.schemas import RunCreate
from graphwright_errors import UserError

log = logging.getLogger(__name__)
ATTEMPTS = 3
RECORD_TTL_S = 3600


def call_webhook(url: str, payload: dict[str, Any], allow: str = "") -> bool:
    """POST the run to `url`, retrying with backoff.

    True once it answers 2xx. The URL is checked again here (its host may resolve elsewhere now) and
    never logged whole.
    """
    try:
        address = webhooks.admit(url, allow)[0]
    except UserError as exc:
        log.warning("webhook %s refused: %s", webhooks.redacted(url), exc)
        return False
    target, headers, extensions = webhooks.pinned(url, address)
    for attempt in range(ATTEMPTS):
        try:
            with httpx.Client(timeout=10, follow_redirects=False) as http:
                response = http.post(target, json=payload, headers=headers, extensions=extensions)
            if response.is_success:
                return True
            log.warning("webhook %s answered %s", webhooks.redacted(url), response.status_code)
        except httpx.HTTPError as exc:  # its text may quote the URL
            log.warning("webhook %s failed: %s", webhooks.redacted(url), type(exc).__name__)
        time.sleep(0.2 * 2**attempt)
    return False


def kept_keys(orch: Orchestrator, store: RunStore, thread_id: str, run_id: str) -> tuple[str, ...]:
    """The keys of a stateless run that outlive its thread: for `wait` and `join`."""
    return (
        orch.keys.run_record(thread_id, run_id),
        orch.keys.thread_runs(thread_id),
        store.inflight(thread_id),
    )


def drop_temporary_thread(orch: Orchestrator, store: RunStore, thread_id: str, run_id: str) -> None:
    """Delete a stateless run's thread, before its end is recorded (a waiter finds it gone).

    Its run record stays (see `expire_kept`).
    """
    orch.client.srem(orch.keys.registry(thread_id), *kept_keys(orch, store, thread_id, run_id))
    orch.saver.delete_thread(thread_id)
    orch.client.delete(orch.keys.meta(thread_id))
    orch.index.forget([thread_id])  # as Orchestrator.delete: the search index forgets it too


def expire_kept(orch: Orchestrator, store: RunStore, thread_id: str, run_id: str) -> None:
    """A dropped thread's run record and lists expire within the run retention, when shorter.

    This applies after the end: the end sets the record's own expiry.
    """
    for key in kept_keys(orch, store, thread_id, run_id):
        orch.client.expire(key, min(RECORD_TTL_S, store.retention_s))


def webhooks_disabled(orch: Orchestrator) -> bool:
    """`http.disable_webhooks` in `langgraph.json`.

    Runs keep their webhook, which is never called (as the reference does).
    """
    return orch.project is not None and orch.project.config.http.disable_webhooks


def after_run(orch: Orchestrator, store: RunStore, thread_id: str, run_id: str) -> None:
    """What follows a run's end: its webhook, and the thread's removal for a stateless run."""
    raw = store.raw(thread_id, run_id)
    body = RunCreate.model_validate_json(raw["body"])
    if body.webhook and webhooks_disabled(orch):
        log.info("webhooks are off (http.disable_webhooks): run %s's is not called", run_id)
    elif body.webhook:
        run = store.get(thread_id, run_id).model_dump(mode="json")
        call_webhook(
            body.webhook, {**run, "values": raw.get("output")}, orch.settings.webhook_allow
        )
    if raw.get("stateless") == "delete":
        expire_kept(orch, store, thread_id, run_id)
