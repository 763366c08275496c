"""The trace of a thread: one Redis stream of redacted events, appended as steps happen."""

from __future__ import annotations

import json
import time
from typing import Any

import redis

from checkpoints.errors import RedisUnavailableError
from checkpoints.keys import Keys
from checkpoints.redact import redact
from checkpoints.sealed import Sealer

MAX_EVENTS = 10_000  # per thread; older events are trimmed (approximately) beyond this


class TraceWriter:
    """Appends and reads trace events; every event is redacted before it leaves the process."""

    def __init__(self, client: redis.Redis, keys: Keys, *, ttl_s: int | None = None,
                 sealer: Sealer | None = None) -> None:
        self.redis = client
        self.sealer = sealer or keys.sealer  # events hold tool arguments and results
        self.keys = keys
        self.ttl_s = ttl_s

    def emit(self, thread_id: str, kind: str, **fields: Any) -> str:
        """Append one redacted event; returns its stream entry id."""
        event = redact({"kind": kind, "ts": time.time(), **fields})
        key = self.keys.events(thread_id)
        try:
            with self.redis.pipeline(transaction=False) as pipe:
                pipe.xadd(
                    key,
                    {"e": self.sealer.seal_text(json.dumps(event, ensure_ascii=False, default=str))},
                    maxlen=MAX_EVENTS,
                    approximate=True,
                )
                # The thread registry lets delete and TTL refresh find the stream.
                pipe.sadd(self.keys.registry(thread_id), key)
                if self.ttl_s:
                    pipe.expire(key, self.ttl_s)
                entry_id = pipe.execute()[0]
        except redis.RedisError as exc:
            raise RedisUnavailableError(
                f"cannot append to the trace of thread {thread_id!r}: {exc}"
            ) from exc
        return entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)

    def read(self, thread_id: str, since: str = "-") -> list[dict[str, Any]]:
        """The thread's events from entry ``since`` on (all by default), oldest first."""
        try:
            entries: list[tuple[bytes, dict[bytes, bytes]]] = self.redis.xrange(  # type: ignore[assignment]  # redis-py types bytes|str
                self.keys.events(thread_id), min=since
            )
        except redis.RedisError as exc:
            raise RedisUnavailableError(
                f"cannot read the trace of thread {thread_id!r}: {exc}"
            ) from exc
        out = []
        for entry_id, data in entries:
            event = json.loads(self.sealer.open(data[b"e"]))
            event["id"] = entry_id.decode()
            out.append(event)
        return out
