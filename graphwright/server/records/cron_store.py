"""Crons in Redis: a schedule and the run it starts, on one thread or a new thread each time.

Documents live in one hash; the time of each enabled cron's next due run is its score in
the `due` sorted set (the scheduler claims from there). Schedules are croniter's: five
fields, or six with seconds last.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import redis
from croniter import croniter
from pydantic import ValidationError

from graphwright.checkpoints.keys import Keys
from graphwright.server.errors import UnprocessableError
from graphwright.server.schemas.run_bodies import RunCreate
from graphwright.thread_index import contains
from graphwright_errors import NotFoundError, UserError

Doc = dict[str, Any]
Allows = Callable[[Mapping[str, Any]], bool]  # an auth filter over a cron's metadata
SORTABLE = (
    "cron_id",
    "assistant_id",
    "thread_id",
    "next_run_date",
    "end_time",
    "created_at",
    "updated_at",
)


class InvalidScheduleError(UserError):
    """A cron schedule croniter cannot read (HTTP 422)."""


PRIVATE_PERMISSIONS = "_user_permissions"  # kept in the document, never in an answer


class InvalidCronError(UnprocessableError):
    """A cron whose run would not validate.

    Refused at create and update (HTTP 422), recorded on the cron and skipped at fire time (a
    document written before this check).
    """


def run_body(cron: Mapping[str, Any], metadata: Mapping[str, Any] | None = None) -> RunCreate:
    """The run a cron starts, validated.

    The one check at create, at update and at fire time (which passes the metadata its creator's
    grant decided).
    """
    payload = {k: v for k, v in cron["payload"].items() if k != PRIVATE_PERMISSIONS}
    payload["metadata"] = (
        dict(metadata)
        if metadata is not None
        else {**(payload.get("metadata") or {}), **(cron.get("metadata") or {})}
    )
    payload.setdefault(
        "multitask_strategy", "enqueue"
    )  # a busy thread delays the run, never drops it
    try:
        return RunCreate.model_validate(payload)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in exc.errors()
        )
        raise InvalidCronError(f"the cron's run is invalid: {problems}") from exc


def _zone(timezone: str | None) -> tzinfo:
    try:
        return ZoneInfo(timezone) if timezone else UTC
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise UserError(
            f"unknown timezone {timezone!r}; give an IANA name such as 'Europe/Paris'"
        ) from exc


def check_schedule(schedule: str) -> None:
    """Refuse a schedule croniter cannot read, with the format it expects."""
    if not croniter.is_valid(schedule):
        raise InvalidScheduleError(
            f"Invalid cron schedule: '{schedule}'. Use the standard cron format (minute hour "
            "day_of_month month day_of_week), optionally with seconds as a sixth field."
        )


def next_after(schedule: str, after: float, timezone: str | None = None) -> int:
    """The first due time strictly after `after` (epoch seconds), in the schedule's zone."""
    start = datetime.fromtimestamp(after, _zone(timezone))
    return int(croniter(schedule, start).get_next(float))


def parse_time(value: str | None) -> float | None:
    """A request's ISO time as a Unix time; a time without a zone is UTC."""
    if not value:
        return None
    when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def iso(ts: float | None) -> str | None:
    """A stored Unix time as ISO 8601 in UTC, as the API answers."""
    return None if ts is None else datetime.fromtimestamp(ts, UTC).isoformat()


class CronStore:
    """Create, read, change and delete crons; keeps the due set in step with each document."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self.redis = client
        self.keys = keys
        self.sealer = keys.sealer  # documents hold the run's input and config

    def record_failure(self, cron_id: str, slot: int, error: BaseException) -> None:
        """Note on the cron why the run due at `slot` did not start (read back as last_error)."""
        note = {"slot": iso(slot), "error": f"{type(error).__name__}: {error}"}
        # the error may quote the cron's body: sealed like the cron's document
        self.redis.hset(
            self.keys.cron_errors(),
            cron_id,
            self.sealer.seal_json(note, self.keys.cron_errors(), cron_id),
        )

    def find(self, cron_id: str) -> Doc | None:
        raw: bytes | None = self.redis.hget(self.keys.crons(), cron_id)  # type: ignore[assignment]  # bytes client
        return None if raw is None else dict(self.sealer.open_json(raw, self.keys.crons(), cron_id))

    def get(self, cron_id: str) -> Doc:
        doc = self.find(cron_id)
        if doc is None:
            raise NotFoundError(f"Cron with ID {cron_id} not found")
        return self._with_next(doc)

    def _with_next(self, doc: Doc) -> Doc:
        """The due set's time while the cron is scheduled, else the one last computed."""
        score = self.redis.zscore(self.keys.cron_due(), doc["cron_id"])
        failed: bytes | None = self.redis.hget(self.keys.cron_errors(), doc["cron_id"])  # type: ignore[assignment]  # bytes client
        extra = (
            {"last_error": self.sealer.open_json(failed, self.keys.cron_errors(), doc["cron_id"])}
            if failed is not None
            else {}
        )
        shown = {k: v for k, v in doc.items() if k != PRIVATE_PERMISSIONS}
        return {
            **shown,
            **extra,
            "next_run_date": iso(float(score)) if score is not None else doc.get("next_run_date"),
        }

    def _schedule(self, pipe: Any, doc: Doc, now: float) -> None:
        """Put the cron's next due time in the due set, or take it out (disabled, ended)."""
        due = next_after(doc["schedule"], now, doc.get("timezone"))
        doc["next_run_date"] = iso(due)
        end = parse_time(doc.get("end_time"))
        if doc.get("enabled", True) and (end is None or due <= end):
            pipe.zadd(self.keys.cron_due(), {doc["cron_id"]: due})
        else:
            pipe.zrem(self.keys.cron_due(), doc["cron_id"])

    def create(
        self,
        *,
        payload: Mapping[str, Any],
        schedule: str,
        assistant_id: str,
        thread_id: str | None = None,
        end_time: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        enabled: bool = True,
        timezone: str | None = None,
        on_run_completed: str | None = None,
        now: float | None = None,
        user_id: str = "",
        user_permissions: tuple[str, ...] = (),
    ) -> Doc:
        check_schedule(schedule)
        _zone(timezone)
        cron_id = str(uuid.uuid4())
        moment = datetime.now(UTC).timestamp() if now is None else now
        run = {**payload, "assistant_id": assistant_id}
        config = dict(run.get("config") or {})
        config["configurable"] = {**(config.get("configurable") or {}), "cron_id": cron_id}
        run["config"] = config
        doc: Doc = {
            "cron_id": cron_id,
            "assistant_id": assistant_id,
            "thread_id": thread_id,
            "user_id": user_id,
            "end_time": iso(parse_time(end_time)),
            "schedule": schedule,
            "timezone": timezone,
            "payload": run,
            "metadata": dict(metadata or {}),
            "on_run_completed": None if thread_id else (on_run_completed or "delete"),
            "enabled": enabled,
            "created_at": iso(moment),
            "updated_at": iso(moment),
            PRIVATE_PERMISSIONS: list(user_permissions),  # the creator's, to authorize each fire
        }
        run_body(doc)
        with self.redis.pipeline(transaction=True) as pipe:
            self._schedule(pipe, doc, moment)
            pipe.hset(
                self.keys.crons(), cron_id, self.sealer.seal_json(doc, self.keys.crons(), cron_id)
            )
            pipe.execute()
        return self.get(cron_id)

    def update(self, cron_id: str, changes: Mapping[str, Any], now: float | None = None) -> Doc:
        """Change schedule, end_time, enabled, timezone, metadata or the run payload fields."""
        doc = self.find(cron_id)
        if doc is None:
            raise NotFoundError(f"Cron with ID {cron_id} not found")
        if "schedule" in changes:
            check_schedule(changes["schedule"])
        if changes.get("timezone"):
            _zone(changes["timezone"])
        top = ("schedule", "enabled", "timezone", "on_run_completed", "metadata")
        for field in top:
            if changes.get(field) is not None:
                doc[field] = changes[field]
        if "end_time" in changes:
            doc["end_time"] = iso(parse_time(changes["end_time"]))
        doc["payload"] = {
            **doc["payload"],
            **changes,
        }  # the request stays whole in the payload, as the reference keeps it
        run_body(doc)
        moment = datetime.now(UTC).timestamp() if now is None else now
        doc["updated_at"] = iso(moment)
        due = self.redis.zscore(self.keys.cron_due(), cron_id)
        end = parse_time(doc.get("end_time"))
        with self.redis.pipeline(transaction=True) as pipe:
            if due is None or {"schedule", "timezone", "enabled"} & changes.keys():
                self._schedule(pipe, doc, moment)
            elif end is not None and float(due) > end:
                pipe.zrem(self.keys.cron_due(), cron_id)
            # else the next due run stays as it is: a new end_time or payload skips none
            pipe.hset(
                self.keys.crons(), cron_id, self.sealer.seal_json(doc, self.keys.crons(), cron_id)
            )
            pipe.execute()
        return self.get(cron_id)

    def delete(self, cron_id: str) -> None:
        with self.redis.pipeline(transaction=True) as pipe:
            pipe.hdel(self.keys.crons(), cron_id)
            pipe.zrem(self.keys.cron_due(), cron_id)
            pipe.hdel(self.keys.cron_errors(), cron_id)
            removed, *_ = pipe.execute()
        if not removed:
            raise NotFoundError(f"Cron with ID {cron_id} not found")

    def _matching(
        self,
        assistant_id: str | None,
        thread_id: str | None,
        enabled: bool | None,
        metadata: Mapping[str, Any] | None,
        allows: Allows | None = None,
    ) -> list[Doc]:
        raw: dict[bytes, bytes] = self.redis.hgetall(self.keys.crons())  # type: ignore[assignment]  # bytes client
        docs = [self.sealer.open_json(v, self.keys.crons(), k) for k, v in raw.items()]
        return [
            d
            for d in docs
            if (not assistant_id or d["assistant_id"] == assistant_id)
            and (not thread_id or d.get("thread_id") == thread_id)
            and (enabled is None or bool(d.get("enabled", True)) == enabled)
            and (not metadata or contains(d.get("metadata") or {}, metadata))
            and (allows is None or allows(d.get("metadata") or {}))
        ]

    def search(
        self,
        *,
        assistant_id: str | None = None,
        thread_id: str | None = None,
        enabled: bool | None = None,
        metadata: Mapping[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        sort_by: str | None = None,
        sort_order: str | None = None,
        select: list[str] | None = None,
        allows: Allows | None = None,
    ) -> list[Doc]:
        found = self._matching(assistant_id, thread_id, enabled, metadata, allows)
        docs = [self._with_next(d) for d in found]
        field = sort_by if sort_by in SORTABLE else "created_at"
        descending = not (sort_order and sort_order.lower() == "asc")
        docs.sort(key=lambda d: str(d.get(field) or ""), reverse=descending)
        page = docs[offset : offset + limit]
        return [{k: v for k, v in d.items() if k in select} for d in page] if select else page

    def count(
        self,
        *,
        assistant_id: str | None = None,
        thread_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        allows: Allows | None = None,
    ) -> int:
        return len(self._matching(assistant_id, thread_id, None, metadata, allows))
