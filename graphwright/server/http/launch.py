"""Starting runs and following them from the API process.

Create (and queue, or execute here), wait, relay the event stream, cancel and delete. Waits are
blocking reads on the run's event stream, in async code: no thread and no polling per waiting
client.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import re
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import redis
from redis.exceptions import (
    ClusterDownError,
    MasterDownError,
    ReadOnlyError,
    RedisClusterException,
    TryAgainError,
)

from graphwright.graphs.gates import gate_command, pending_gate
from graphwright.locking import ThreadBusyError, held
from graphwright.server.errors import UnprocessableError
from graphwright.server.http.deps import Service
from graphwright.server.offload import offload
from graphwright.server.records.event_log import END, stream_key
from graphwright.server.records.run_store import TERMINAL
from graphwright.server.runs import run_assistant
from graphwright.server.runs.payloads import check_input, run_config
from graphwright.server.runs.values import final_values
from graphwright.server.schemas.run_bodies import CancelMany, Run, RunCreate
from graphwright_errors import NotFoundError, UserError

WAIT_BLOCK_MS = 2000  # a quiet run's record is looked at this often (it may have been deleted)
END_BYTES = END.encode()
log = logging.getLogger(__name__)
T = TypeVar("T")
# What a failover or restart answers for a while; a read that meets it is made again.
PASSING: tuple[type[Exception], ...] = (
    redis.ConnectionError,
    redis.TimeoutError,
    ClusterDownError,
    TryAgainError,
    ReadOnlyError,
    MasterDownError,
    RedisClusterException,
)


class Launcher:
    """The run operations of one request."""

    def __init__(self, svc: Service) -> None:
        self.svc = svc
        self.orch = svc.orch
        self.store = svc.store

    def start(
        self,
        thread_id: str | None,
        body: RunCreate,
        *,
        background: bool,
        meta: dict[str, str] | None = None,
    ) -> Run:
        """Check, record and queue (or begin executing) a run.

        On a temporary thread if none. `meta` is the thread's as the caller has just read it (its
        admission), if it has.
        """
        if (body.config or {}).get("configurable") and body.context:  # 400, as the reference
            raise UserError(
                "Cannot specify both configurable and context: prefer setting "
                "context alone (it replaces configurable since LangGraph 0.6)"
            )
        assistant = run_assistant.resolve(self.orch, body)  # body now names the graph
        spec = self.orch.graphs.get(body.assistant_id)
        graph = self.orch.compiled(spec.name)
        check_input(spec, graph, body.input)
        thread_id, meta, extra = self._thread(thread_id, body, meta)
        if body.command is not None and not meta.get("graph"):
            raise NotFoundError(f"no thread {thread_id!r} with a run to resume")
        if body.command is not None and body.command.resume is not None:
            config = run_config(thread_id, str(uuid.uuid4()), body)
            if pending_gate(graph, config) is not None:  # 422 if the answer does not fit
                gate_command(graph, config, body.command.resume, spec.tools())
        run_assistant.merge_metadata(meta, assistant, body, stateless="stateless" in extra)
        run_assistant.stamp(self.orch, thread_id, assistant, meta)
        # The record names the assistant, as the reference's does.
        extra["assistant_id"] = assistant["assistant_id"]
        strategy = body.multitask_strategy or "reject"
        if (
            strategy == "reject"
            and held(self.orch.client, self.orch.keys, thread_id)
            and not self.store.active(thread_id)
        ):
            raise ThreadBusyError(f"thread {thread_id!r} is running outside the HTTP service")
        # Here only a wait or stream that may start now; a run for later sits in the delayed
        # queue for the workers, never in a sleeping process.
        delay_s = body.after_seconds or 0
        here = not (background or self.svc.queue_waits or delay_s > 0)
        lease_s = self.store.claim_window_s if here else None
        run = self.store.create(
            thread_id, body, queue=not here, delay_s=delay_s, lease_s=lease_s, **extra
        )
        if here:
            self.svc.local.submit(run.thread_id, run.run_id)
        return run

    def _thread(
        self, thread_id: str | None, body: RunCreate, meta: dict[str, str] | None
    ) -> tuple[str, dict[str, str], dict[str, str]]:
        """The run's thread, its meta and the record's extra fields.

        The meta is read once here: every step of `start` until the stamp reads it. A temporary
        thread (none named) is made for the caller and marked stateless.
        """
        if meta is None:
            meta = self.orch.meta(thread_id) if thread_id is not None else {}
        if thread_id is None:
            owner = (body.metadata or {}).get("owner")  # a temporary thread is its caller's too
            thread_id = self.orch.create_thread(
                str(uuid.uuid4()), {"owner": owner} if owner else {}
            )
            return (
                thread_id,
                self.orch.meta(thread_id),
                {"stateless": body.on_completion or "delete"},
            )
        if not meta:
            if body.if_not_exists != "create":
                raise NotFoundError(f"no thread {thread_id!r}")
            self.orch.create_thread(thread_id, body.metadata)
            meta = self.orch.meta(thread_id)
        return thread_id, meta, {}

    async def ride(self, read: Callable[[], Awaitable[T]]) -> T:
        """Make a read of a wait, again through a Redis outage or failover, within the retry budget.

        The asyncio client alone gives up within seconds: a run that goes on to succeed must not be
        answered 503 for a blip.
        """
        deadline = time.monotonic() + self.orch.settings.redis_retry_s
        failures = 0
        while True:
            try:
                return await read()
            except PASSING as exc:
                failures += 1
                pause = min(1.0, 0.05 * 2**failures) * random.uniform(0.5, 1.0)  # jitter
                if time.monotonic() + pause > deadline:
                    raise
                log.info("a wait's Redis read failed (%s); trying again", type(exc).__name__)
                await asyncio.sleep(pause)

    async def finished(self, run: Run, timeout_s: float = 3600) -> None:
        """Wait for the run to end.

        Blocking reads on its end stream, which wakes once, looking at its record only when that
        read times out (the run may be gone).
        """
        client = self.svc.aio()
        key = self.orch.keys.run_end(run.thread_id, run.run_id)
        record = self.orch.keys.run_record(run.thread_id, run.run_id)
        deadline = time.monotonic() + timeout_s
        if over(await self.ride(lambda: client.hget(record, "status"))):
            return  # ended, rolled back or deleted already
        while time.monotonic() < deadline:
            if await self.ride(lambda: client.xread({key: "0-0"}, count=1, block=WAIT_BLOCK_MS)):
                return  # a stateless run's thread is gone by now
            if over(await self.ride(lambda: client.hget(record, "status"))):
                return

    async def output(self, run: Run) -> Any:
        """What `runs.wait` and `runs.join` return.

        The final values, or `__error__`; read on the loop (the run's record holds them), the
        thread's state only if not.
        """
        key = self.orch.keys.run_record(run.thread_id, run.run_id)
        client = self.svc.aio()
        got: Any = await self.ride(lambda: client.hgetall(key))  # bytes keys and values
        data: dict[bytes, bytes] = got
        if not data:
            return {}
        raw = self.store.opened(key, data)
        if raw.get("status") == "error":
            return {
                "__error__": json.loads(raw.get("error") or "{}")
                if raw.get("error", "").startswith("{")
                else {"error": "Error", "message": raw.get("error", "")}
            }
        if raw.get("output"):
            return json.loads(raw["output"])
        return await offload(final_values, self.orch, run.thread_id)

    def latest(self, thread_id: str) -> Run:
        runs = self.store.list(thread_id, 1)
        if not runs:
            raise NotFoundError(f"thread {thread_id!r} has no run to join")
        return runs[0]

    def cancel(self, thread_id: str, run_id: str, action: str) -> str:
        if action not in ("interrupt", "rollback"):
            raise UserError(f"cancel action must be interrupt or rollback, not {action!r}")
        self.store.get(thread_id, run_id)
        outcome = self.store.cancel(thread_id, run_id, action)
        if outcome == "cancelled" and action == "rollback":
            self.store.delete(thread_id, run_id)
        return outcome

    def cancel_many(
        self, body: CancelMany, action: str, visible: Callable[[str], bool] = lambda _: True
    ) -> None:
        if body.status and (body.thread_id or body.run_ids):
            raise UnprocessableError("with a status, give neither thread_id nor run_ids")
        if not body.status and not (body.thread_id and body.run_ids):
            raise UnprocessableError("give a status, or a thread_id with run_ids")
        wanted = {"pending", "running"} if body.status in (None, "all") else {body.status}
        threads = [body.thread_id] if body.thread_id else [t.thread_id for t in self.orch.threads()]
        threads = [t for t in threads if visible(t)]  # the caller's own, under custom auth
        for thread_id in threads:
            for run_id in self.store.active(thread_id):
                if body.run_ids and run_id not in body.run_ids:
                    continue
                try:
                    if self.store.get(thread_id, run_id).status in wanted:
                        self.cancel(thread_id, run_id, action)
                except NotFoundError:
                    continue

    def delete(self, thread_id: str, run_id: str) -> None:
        run = self.store.get(thread_id, run_id)
        if run.status in ("pending", "running"):
            raise ThreadBusyError(f"run {run_id} is {run.status}; cancel it first")
        self.store.delete(thread_id, run_id)


def over(status: Any) -> bool:
    """Whether a run record's status (bytes, or None once it is gone) says it has ended."""
    return status is None or status.decode() in TERMINAL


def wanted(event: str, modes: list[str]) -> bool:
    """Whether a joined stream asked for this event (no modes: every event)."""
    if not modes or event in ("metadata", "error"):
        return True
    base = event.split("|")[0].split("/")[0]
    return base in modes or (base == "messages" and "messages-tuple" in modes)


async def relay(
    launch: Launcher,
    run: Run,
    modes: list[str],
    last_event_id: str | None,
    *,
    cancel_on_disconnect: bool = False,
) -> AsyncIterator[dict[str, str]]:
    """The run's events from its Redis stream, from `last_event_id` on, until it ends.

    Blocking reads on the server's loop, no thread held while the run is quiet.
    """
    client = launch.svc.aio()
    key = stream_key(launch.orch.keys, run.thread_id, run.run_id)
    record = launch.orch.keys.run_record(run.thread_id, run.run_id)
    sealer = launch.orch.keys.sealer
    # A Last-Event-ID that is no stream id (a client's "null") replays from the start.
    cursor = (
        last_event_id if last_event_id and re.fullmatch(r"\d+(-\d+)?", last_event_id) else "0-0"
    )
    ended = False

    async def batch(after: str) -> tuple[list[tuple[str, str, str]], bool]:
        got = await _read(launch, client, key, record, after)
        if got is None:
            return [], False
        return _decoded(got, sealer, key)

    try:
        while True:
            items, done = await batch(cursor)
            for entry_id, event, data in items:
                cursor = entry_id
                if wanted(event, modes):
                    yield {"id": entry_id, "event": event, "data": data}
            if done:
                ended = True
                return
    finally:
        if cancel_on_disconnect and not ended:  # a quick Redis call; no await in a cancelled task
            launch.store.cancel(run.thread_id, run.run_id, "interrupt")


async def _read(launch: Launcher, client: Any, key: str, record: str, after: str) -> Any:
    """The stream's next entries after `after`: None while the run is quiet and not over.

    Each read rides a Redis outage or failover within the retry budget, as a wait does.
    """
    got: Any = await launch.ride(lambda: client.xread({key: after}, count=500, block=WAIT_BLOCK_MS))
    if got:
        return got
    # Quiet for a while: has the run ended (or gone) meanwhile?
    if not over(await launch.ride(lambda: client.hget(record, "status"))):
        return None
    return await launch.ride(lambda: client.xread({key: after}, count=500)) or []


def _decoded(got: Any, sealer: Any, key: str) -> tuple[list[tuple[str, str, str]], bool]:
    """The read's (id, event, data) entries, and whether the stream's end was among them."""
    if not got:
        return [], True
    items: list[tuple[str, str, str]] = []
    for entry_id, fields in got[0][1]:
        if fields[b"event"] == END_BYTES:
            return items, True
        data = sealer.open_text(fields[b"data"], key, "data")
        items.append((entry_id.decode(), fields[b"event"].decode(), data))
    return items, False
