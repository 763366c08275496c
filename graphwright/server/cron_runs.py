"""What a due cron does: enqueue its run for the workers, on its thread or a new one.

Each call is named by the run id the scheduler derives from the cron and the slot, so a
scheduler that takes over a claim finds the run already made (the run store records and
queues a run in one step) and leaves it.
"""

from __future__ import annotations

from typing import Any

from graphwright.orchestrator import Orchestrator
from graphwright.server import run_assistant
from graphwright.server.cron_scheduler import CronScheduler, Fire
from graphwright.server.runs import RunStore
from graphwright.server.schemas import RunCreate
from graphwright_errors import NotFoundError


def fire_for(orch: Orchestrator) -> Fire:
    runs = RunStore(orch.client, orch.keys)

    def fire(cron: dict[str, Any], run_id: str, thread_id: str | None) -> None:
        thread = thread_id or run_id  # a stateless cron's run gets a thread of its own
        try:
            runs.get(thread, run_id)
            return  # made (and queued, in the same step) before a takeover; its record
            # outlives a stateless run's deleted thread
        except NotFoundError:
            pass
        if not orch.meta(thread):
            if thread_id:
                raise NotFoundError(f"cron {cron['cron_id']}: its thread {thread_id} is gone")
            # the cron's metadata (its owner among it) goes on the thread: its owner can read it
            orch.create_thread(thread, {**(cron.get("metadata") or {}), "cron_id": cron["cron_id"]})
        payload = dict(cron["payload"])
        payload["metadata"] = {**(cron.get("metadata") or {}), **(payload.get("metadata") or {})}
        payload.setdefault("multitask_strategy", "enqueue")  # a busy thread delays the run, never drops it
        body = RunCreate.model_validate(payload)
        assistant = run_assistant.resolve(orch, body)
        run_assistant.stamp(orch, thread, assistant)
        if thread_id:
            runs.create(thread, body, queue=True, run_id=run_id, assistant_id=assistant["assistant_id"])
        else:  # its thread goes when the run ends, unless the cron keeps it
            runs.create(thread, body, queue=True, run_id=run_id, assistant_id=assistant["assistant_id"],
                        stateless=str(cron.get("on_run_completed") or "delete"))

    return fire


def scheduler_for(orch: Orchestrator) -> CronScheduler:
    """The scheduler a worker runs beside its queue consumer."""
    return CronScheduler(orch.client, orch.keys, fire_for(orch), interval_s=orch.settings.cron_tick_s,
                         lease_s=orch.settings.cron_lease_s)


__all__ = ["fire_for", "scheduler_for"]
