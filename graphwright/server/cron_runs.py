"""What a due cron does: enqueue its run for the workers, on its thread or a new one.

Each call is named by the run id the scheduler derives from the cron and the slot, so a
scheduler that takes over a claim finds the run already made and only re-enqueues it
while it is still pending (a worker acknowledges a finished run's extra entry unrun).
"""

from __future__ import annotations

from typing import Any

from checkpoints.errors import NotFoundError
from graphwright.orchestrator import Orchestrator
from graphwright.server.cron_scheduler import CronScheduler, Fire
from graphwright.server.runs import RunStore
from graphwright.server.schemas import RunCreate
from graphwright.server.threads_api import on_run_start


def fire_for(orch: Orchestrator) -> Fire:
    runs = RunStore(orch.client, orch.keys)

    def fire(cron: dict[str, Any], run_id: str, thread_id: str | None) -> None:
        thread = thread_id or run_id  # a stateless cron's run gets a thread of its own
        if not orch.meta(thread):
            if thread_id:
                raise NotFoundError(f"cron {cron['cron_id']}: its thread {thread_id} is gone")
            orch.create_thread(thread, {"cron_id": cron["cron_id"]})
        try:
            existing = runs.get(thread, run_id)
        except NotFoundError:
            existing = None
        if existing is not None:
            if existing.status == "pending":
                runs.enqueue(existing)
            return
        payload = dict(cron["payload"])
        payload["metadata"] = {**(cron.get("metadata") or {}), **(payload.get("metadata") or {})}
        body = RunCreate.model_validate(payload)
        body.assistant_id = on_run_start(orch, thread, body.assistant_id)["graph_id"]
        runs.enqueue(runs.create(thread, body, run_id=run_id))

    return fire


def scheduler_for(orch: Orchestrator) -> CronScheduler:
    """The scheduler a worker runs beside its queue consumer."""
    return CronScheduler(orch.client, orch.keys, fire_for(orch), interval_s=orch.settings.cron_tick_s,
                         lease_s=orch.settings.cron_lease_s)


__all__ = ["fire_for", "scheduler_for"]
