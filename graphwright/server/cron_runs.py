"""What a due cron does: enqueue its run for the workers, on its thread or a new one.

Each call is named by the run id the scheduler derives from the cron and the slot, and the
run store creates a record only where none is (one atomic step that also queues it): a
scheduler that takes over a claim, or races the first claimer, finds the run made and
leaves it.
"""

from __future__ import annotations

import logging
from typing import Any

from graphwright.orchestrator import Orchestrator
from graphwright.server import run_assistant
from graphwright.server.cron_scheduler import CronScheduler, Fire
from graphwright.server.cron_store import run_body
from graphwright.server.runs import RunExistsError, RunStore
from graphwright_errors import NotFoundError, UserError

log = logging.getLogger(__name__)


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
        body = run_body(cron)  # an invalid body fails here, before it makes a thread
        if not orch.meta(thread):
            if thread_id:
                raise NotFoundError(f"cron {cron['cron_id']}: its thread {thread_id} is gone")
            # the cron's metadata (its owner among it) goes on the thread: its owner can read it
            try:
                orch.create_thread(thread, {**(cron.get("metadata") or {}),
                                            "cron_id": cron["cron_id"]})
            except UserError:
                if not orch.meta(thread):
                    raise
                # a scheduler racing this one made it: the run store decides who makes the run
        assistant = run_assistant.resolve(orch, body)
        run_assistant.stamp(orch, thread, assistant)
        try:
            if thread_id:
                runs.create(thread, body, queue=True, run_id=run_id,
                            assistant_id=assistant["assistant_id"])
            else:  # its thread goes when the run ends, unless the cron keeps it
                runs.create(thread, body, queue=True, run_id=run_id,
                            assistant_id=assistant["assistant_id"],
                            stateless=str(cron.get("on_run_completed") or "delete"))
        except RunExistsError:
            log.info("cron %s: run %s was already made by another scheduler", cron["cron_id"], run_id)

    return fire


def scheduler_for(orch: Orchestrator) -> CronScheduler:
    """The scheduler a worker runs beside its queue consumer."""
    if orch.settings.cron_lease_s <= orch.settings.redis_retry_s:
        log.warning("GRAPHWRIGHT_CRON_LEASE_S (%ss) is not longer than the Redis retry budget "
                    "(%ss): a claimer still retrying is taken over, and its run is refused as made",
                    orch.settings.cron_lease_s, orch.settings.redis_retry_s)
    return CronScheduler(orch.client, orch.keys, fire_for(orch), interval_s=orch.settings.cron_tick_s,
                         lease_s=orch.settings.cron_lease_s)


__all__ = ["fire_for", "scheduler_for"]
