"""Reading run records: one run, its body and signals, and a thread's runs listed by page."""

from __future__ import annotations

import builtins
import json
from datetime import UTC, datetime
from typing import Any

from graphwright.server.records._run_base import RunStoreBase
from graphwright.server.runs.payloads import run_kwargs
from graphwright.server.schemas.run_bodies import Run, RunCreate
from graphwright_errors import NotFoundError

LIST_PAGE = 100  # run records read per round trip while a listing filters by status


def iso(ts: float) -> str:
    """A stored Unix time as ISO 8601 in UTC, as the API answers."""
    return datetime.fromtimestamp(ts, UTC).isoformat()


class RunReads(RunStoreBase):
    """The run store's reads: nothing here writes."""

    def raw(self, thread_id: str, run_id: str) -> dict[str, str]:
        key = self.keys.run_record(thread_id, run_id)
        data: dict[bytes, bytes] = self.redis.hgetall(key)  # type: ignore[assignment]  # bytes client
        if not data:
            raise NotFoundError(f"no run {run_id!r} on thread {thread_id!r}")
        return self.opened(key, data)

    def get(self, thread_id: str, run_id: str) -> Run:
        return self.to_run(self.raw(thread_id, run_id))

    def body(self, thread_id: str, run_id: str) -> RunCreate:
        return RunCreate.model_validate_json(self.raw(thread_id, run_id)["body"])

    def list(
        self, thread_id: str, limit: int = 10, offset: int = 0, status: str | None = None
    ) -> builtins.list[Run]:
        """The thread's runs, newest first, paged in Redis.

        Without a status only the page's records are read; with one, pages of them until enough
        match.
        """
        key = self.keys.thread_runs(thread_id)
        start, skip = (offset, 0) if status is None else (0, offset)
        size = limit + skip if status is None else max(LIST_PAGE, limit + skip)
        found: builtins.list[Run] = []
        while len(found) < skip + limit:
            got: Any = self.redis.zrevrange(key, start, start + size - 1)
            ids: builtins.list[bytes] = got
            if not ids:
                break
            start += len(ids)
            found += [
                run
                for run in self._records(thread_id, [i.decode() for i in ids])
                if status is None or run.status == status
            ]
        return found[skip : skip + limit]

    def _records(self, thread_id: str, run_ids: builtins.list[str]) -> builtins.list[Run]:
        """The runs of `run_ids` read in one round trip, in order; those gone are left out."""
        keys = [self.keys.run_record(thread_id, r) for r in run_ids]
        with self.redis.pipeline(transaction=False) as pipe:  # one slot: the thread's tag
            for key in keys:
                pipe.hgetall(key)
            got: builtins.list[dict[bytes, bytes]] = pipe.execute()
        return [
            self.to_run(self.opened(key, data)) for key, data in zip(keys, got, strict=True) if data
        ]

    def active(self, thread_id: str) -> builtins.list[str]:
        ids: builtins.list[bytes] = self.redis.zrange(self.inflight(thread_id), 0, -1)  # type: ignore[assignment]  # bytes client
        return [i.decode() for i in ids]

    def run_ids(self, thread_id: str) -> builtins.list[str]:
        """Every run the thread still lists, oldest first."""
        ids: Any = self.redis.zrange(self.keys.thread_runs(thread_id), 0, -1)
        return [i.decode() for i in ids]

    @staticmethod
    def to_run(record: dict[str, str]) -> Run:
        body = json.loads(record["body"])
        return Run(
            run_id=record["run_id"],
            thread_id=record["thread_id"],
            assistant_id=record["assistant_id"],
            created_at=iso(float(record["created_at"])),
            updated_at=iso(float(record["updated_at"])),
            status=record["status"],  # type: ignore[arg-type]
            metadata=body.get("metadata") or {},
            multitask_strategy=body.get("multitask_strategy") or "enqueue",
            kwargs=run_kwargs(record),
        )
