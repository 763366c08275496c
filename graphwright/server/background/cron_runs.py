"""What a due cron does: enqueue its run for the workers, on its thread or a new one.

Each call is named by the run id the scheduler derives from the cron and the slot, and the
run store creates a record only where none is (one atomic step that also queues it): a
scheduler that takes over a claim, or races the first claimer, finds the run made and
leaves it.

A cron runs as the user who created it: its `user_id` and owner are theirs whatever the
stored payload says, and with custom auth each fire asks the `threads` `create_run`
handlers again, for that user (a handler that now refuses stops the run).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from fastapi import HTTPException

from graphwright.orchestrator import Orchestrator
from graphwright.server.auth.access import MEMORY_USER, OWNER, authorize
from graphwright.server.auth.authority import Authority, User
from graphwright.server.background.cron_scheduler import CronScheduler, Fire
from graphwright.server.records.cron_store import PRIVATE_PERMISSIONS, run_body
from graphwright.server.records.run_store import RunExistsError, RunStore
from graphwright.server.runs import run_assistant
from graphwright.server.schemas.run_bodies import RunCreate
from graphwright_errors import NotFoundError, UserError

log = logging.getLogger(__name__)


def as_creator(
    authority: Authority | None, cron: dict[str, Any], thread: str, metadata: dict[str, Any]
) -> dict[str, Any]:
    """The run's metadata as the cron's creator may start it: their grant, decided now."""
    user = creator_of(cron)
    if authority is None or authority.auth is None or user is None:
        return metadata
    value = {"thread_id": thread, "assistant_id": cron["assistant_id"], "metadata": metadata}
    try:  # the scheduler's own thread: no event loop runs here
        grant = asyncio.run(authorize(authority, user, "threads", "create_run", value))
    except HTTPException as exc:
        raise UserError(f"its creator may no longer start it ({exc.status_code})") from exc
    return grant.metadata


def creator_of(cron: dict[str, Any]) -> User | None:
    """The user who made the cron, its runs' caller; None for a cron made with no identity.

    It is read from `langgraph_auth_user` and `user_id` in their configurable.
    """
    creator = str(cron.get("user_id") or "")
    if not creator:
        return None
    return User(identity=creator, permissions=tuple(cron.get(PRIVATE_PERMISSIONS) or ()))


def fire_for(orch: Orchestrator, authority: Authority | None = None) -> Fire:
    """The scheduler's `fire`: make a due slot's run once, on its thread, as its creator."""
    runs = RunStore(orch.client, orch.keys)

    def fire(cron: dict[str, Any], run_id: str, thread_id: str | None) -> None:
        thread = thread_id or run_id  # a stateless cron's run gets a thread of its own
        if _made(runs, thread, run_id):
            return
        metadata = {**(cron["payload"].get("metadata") or {}), **(cron.get("metadata") or {})}
        if cron.get("user_id"):  # whoever the stored payload names
            metadata[MEMORY_USER] = cron["user_id"]
        metadata = as_creator(authority, cron, thread, metadata)
        body = run_body(cron, metadata)  # an invalid body fails here, before it makes a thread
        _ensure_thread(orch, authority, cron, thread, thread_id, metadata)
        assistant = run_assistant.resolve(orch, body, creator=creator_of(cron))
        run_assistant.stamp(orch, thread, assistant)
        try:
            _create(runs, cron, thread, body, run_id, assistant["assistant_id"], thread_id)
        except RunExistsError:
            log.info(
                "cron %s: run %s was already made by another scheduler", cron["cron_id"], run_id
            )

    return fire


def _create(
    runs: RunStore,
    cron: dict[str, Any],
    thread: str,
    body: RunCreate,
    run_id: str,
    assistant_id: str,
    thread_id: str | None,
) -> None:
    if thread_id:
        runs.create(thread, body, queue=True, run_id=run_id, assistant_id=assistant_id)
    else:  # its thread goes when the run ends, unless the cron keeps it
        runs.create(
            thread,
            body,
            queue=True,
            run_id=run_id,
            assistant_id=assistant_id,
            stateless=str(cron.get("on_run_completed") or "delete"),
        )


def _made(runs: RunStore, thread: str, run_id: str) -> bool:
    """Whether the run was made (and queued, in the same step) before a takeover.

    Its record outlives a stateless run's deleted thread.
    """
    try:
        runs.get(thread, run_id)
    except NotFoundError:
        return False
    return True


def _ensure_thread(
    orch: Orchestrator,
    authority: Authority | None,
    cron: dict[str, Any],
    thread: str,
    thread_id: str | None,
    metadata: dict[str, Any],
) -> None:
    """The run's thread, made for a stateless cron, refused where its creator may not see it."""
    if meta := orch.meta(thread):
        if not matches_grant(authority, meta, metadata):
            raise UserError(f"cron {cron['cron_id']}: its creator may not see its thread")
        return
    if thread_id:
        raise NotFoundError(f"cron {cron['cron_id']}: its thread {thread_id} is gone")
    # the cron's metadata (its owner among it) goes on the thread: its owner can read it
    try:
        orch.create_thread(thread, {**metadata, "cron_id": cron["cron_id"]})
    except UserError:
        if not orch.meta(thread):
            raise
        # a scheduler racing this one made it: the run store decides who makes the run


def matches_grant(
    authority: Authority | None, meta: dict[str, str], metadata: dict[str, Any]
) -> bool:
    """Whether the cron's thread is its creator's: under isolation its owner is theirs."""
    if authority is None or not authority.isolating or OWNER not in metadata:
        return True
    return bool(json.loads(meta.get("metadata") or "{}").get(OWNER) == metadata[OWNER])


def scheduler_for(orch: Orchestrator, authority: Authority | None = None) -> CronScheduler:
    """The scheduler a worker runs beside its queue consumer."""
    return CronScheduler(
        orch.client,
        orch.keys,
        fire_for(orch, authority),
        interval_s=orch.settings.cron_tick_s,
        lease_s=takeover_lease_s(orch.settings.cron_lease_s, orch.settings.redis_retry_s),
    )


def takeover_lease_s(configured_s: float, retry_s: float) -> float:
    """How long a claim is left to its claimer.

    `GRAPHWRIGHT_CRON_LEASE_S`, but never less than the Redis retry budget and a second. A claimer
    whose command is still being retried is alive and about to fire; taking its claim over would
    fire the slot twice at once. That is refused as made (the run id is the cron's and the slot's),
    so exactly once holds either way; the floor keeps a short lease from making it the usual case.
    """
    return max(configured_s, retry_s + 1.0)


__all__ = ["fire_for", "scheduler_for"]
