"""HTTP runs: their records in Redis, how one is executed, and the queue of background runs."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import redis

from checkpoints.errors import NotFoundError, RedisUnavailableError
from checkpoints.keys import Keys
from checkpoints.sealed import Sealer
from graphwright.orchestrator import Orchestrator
from graphwright.results import RunResult, StepEvent
from graphwright.server.schemas import Run, RunCreate, RunStatus, ThreadStatus

GROUP = "workers"
SEALED_RUN = frozenset({"body", "error"})  # fields of a run record sealed at rest
TERMINAL: set[RunStatus] = {"success", "error", "interrupted", "timeout"}
RUN_STATUS: dict[str, RunStatus] = {
    "completed": "success", "stopped": "success", "interrupted": "interrupted", "failed": "error",
}
THREAD_STATUS: dict[str | None, ThreadStatus] = {
    "running": "busy", "interrupted": "interrupted", "failed": "error",
    "completed": "idle", "stopped": "idle", None: "idle",
}


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat()


def goal_of(body: dict[str, Any] | None) -> dict[str, Any]:
    """Our input ({"goal", "constraints"}), or the last user message of a LangGraph-style input."""
    body = body or {}
    if "goal" in body:
        return {"goal": body["goal"], "constraints": body.get("constraints") or []}
    for message in reversed(body.get("messages") or []):
        role = message.get("role") or message.get("type") if isinstance(message, dict) else None
        if role in ("user", "human"):
            return {"goal": str(message.get("content", "")), "constraints": []}
    return {"goal": ""}


class RunStore:
    """Run records: one hash per run, listed per thread, all under the thread's hash tag."""

    def __init__(self, client: redis.Redis, keys: Keys, sealer: Sealer | None = None) -> None:
        self.redis = client
        self.keys = keys
        self.sealer = sealer or keys.sealer  # the body and error hold the user's text

    def create(self, thread_id: str, body: RunCreate, status: RunStatus = "pending") -> Run:
        run_id, now = str(uuid.uuid4()), time.time()
        record = {
            "run_id": run_id, "thread_id": thread_id, "assistant_id": body.assistant_id,
            "created_at": str(now), "updated_at": str(now), "status": status,
            "body": body.model_dump_json(), "started": "0", "error": "",
        }
        key = self.keys.run_record(thread_id, run_id)
        try:
            with self.redis.pipeline(transaction=True) as pipe:
                pipe.hset(key, mapping=self._sealed(record))  # type: ignore[arg-type]  # redis-py's mapping type is invariant
                pipe.zadd(self.keys.thread_runs(thread_id), {run_id: now})
                pipe.sadd(self.keys.registry(thread_id), key, self.keys.thread_runs(thread_id))
                pipe.execute()
        except redis.RedisError as exc:
            raise RedisUnavailableError(f"cannot record run on thread {thread_id!r}: {exc}") from exc
        return self.to_run(record)

    def raw(self, thread_id: str, run_id: str) -> dict[str, str]:
        data: dict[bytes, bytes] = self.redis.hgetall(self.keys.run_record(thread_id, run_id))  # type: ignore[assignment]  # bytes client
        if not data:
            raise NotFoundError(f"no run {run_id!r} on thread {thread_id!r}")
        return {k.decode(): self.sealer.open_text(v) if k.decode() in SEALED_RUN else v.decode()
                for k, v in data.items()}

    def get(self, thread_id: str, run_id: str) -> Run:
        return self.to_run(self.raw(thread_id, run_id))

    def body(self, thread_id: str, run_id: str) -> RunCreate:
        return RunCreate.model_validate_json(self.raw(thread_id, run_id)["body"])

    def update(self, thread_id: str, run_id: str, **fields: str) -> None:
        mapping: dict[str, str] = {**fields, "updated_at": str(time.time())}
        self.redis.hset(self.keys.run_record(thread_id, run_id), mapping=self._sealed(mapping))  # type: ignore[arg-type]  # invariant mapping type

    def _sealed(self, record: dict[str, str]) -> dict[str, str | bytes]:
        return {k: self.sealer.seal_text(v) if k in SEALED_RUN else v for k, v in record.items()}

    def list(self, thread_id: str, limit: int = 10) -> list[Run]:
        ids: list[bytes] = self.redis.zrevrange(self.keys.thread_runs(thread_id), 0, limit - 1)  # type: ignore[assignment]  # bytes client
        return [self.get(thread_id, i.decode()) for i in ids]

    def enqueue(self, run: Run) -> None:
        self.redis.xadd(self.keys.queue(), {"thread_id": run.thread_id, "run_id": run.run_id})

    @staticmethod
    def to_run(record: dict[str, str]) -> Run:
        body = json.loads(record["body"])
        return Run(run_id=record["run_id"], thread_id=record["thread_id"],
                   assistant_id=record["assistant_id"], created_at=iso(float(record["created_at"])),
                   updated_at=iso(float(record["updated_at"])), status=record["status"],  # type: ignore[arg-type]
                   metadata=body.get("metadata") or {},
                   multitask_strategy=body.get("multitask_strategy") or "reject",
                   kwargs={"input": body.get("input"), "command": body.get("command")},
                   error=record.get("error") or None)


def execute(orch: Orchestrator, store: RunStore, run: Run, body: RunCreate) -> Iterator[StepEvent]:
    """Run (or resume) one HTTP run through the Orchestrator, keeping its record current."""
    thread = run.thread_id
    store.update(thread, run.run_id, status="running", started="1")
    if body.command is not None:
        events = orch.stream_resume(thread, body.command.resume, run_id=run.run_id)
    else:
        user = (body.metadata or {}).get("user_id")  # recall and remember for this user
        events = orch.stream(body.assistant_id, goal_of(body.input), thread_id=thread,
                             run_id=run.run_id, user_id=str(user) if user is not None else None)
    yield from follow(store, run, events)


def follow(store: RunStore, run: Run, events: Iterator[StepEvent]) -> Iterator[StepEvent]:
    """Pass the run's steps on and record how it ended."""
    result: RunResult | None = None
    try:
        for event in events:
            result = event.result or result
            yield event
    except BaseException as exc:
        store.update(run.thread_id, run.run_id, status="error", error=f"{type(exc).__name__}: {exc}")
        raise
    if result is not None:
        store.update(run.thread_id, run.run_id, status=RUN_STATUS[result.status],
                     error=result.error or "")


def recover(orch: Orchestrator, store: RunStore, run: Run, body: RunCreate) -> Iterator[StepEvent]:
    """Finish a run whose worker died: from its checkpoint, never starting it over."""
    state = orch.state(run.thread_id)
    if state.pending is not None and body.command is not None:
        yield from execute(orch, store, run, body)  # the gate answer never got applied
    elif state.next:
        store.update(run.thread_id, run.run_id, status="running")
        yield from follow(store, run, orch.stream_resume(run.thread_id, None, run_id=run.run_id))
    else:  # it had finished; only the acknowledgement was lost
        status = "interrupted" if state.pending else "error" if state.status == "failed" else "success"
        store.update(run.thread_id, run.run_id, status=status)
