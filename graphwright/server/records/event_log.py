"""A run's events on a Redis stream.

The executor (in a worker or the API process) appends, every client relays from there, so a dropped
client reconnects with `Last-Event-ID`.

Each entry is `{"event": name, "data": json}`; the run's last entry is the `end` marker
written atomically with its final status (see `RunSteps.finish`), which relays stop on
and never send. The same step writes the status alone to the run's end stream
(`Keys.run_end`), so a waiter blocks on one read that wakes once, not once per event.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import redis

from graphwright.checkpoints.keys import Keys, escape

END = "__end__"
TTL_S = 3600  # a finished run's events stay joinable this long
BLOCK_MS = 1000


def stream_key(keys: Keys, thread_id: str, run_id: str) -> str:
    """The Redis stream a run's events go to, in the thread's slot."""
    return f"{keys.thread_tag(thread_id)}:runev:{escape(run_id)}"


def encode(data: Any) -> str:
    """An event's data as the JSON the SSE `data` field carries."""
    return json.dumps(data, ensure_ascii=False, default=str)


class EventLog:
    """Append to and read from one run's event stream."""

    def __init__(self, client: redis.Redis, keys: Keys, thread_id: str, run_id: str) -> None:
        self.redis = client
        self.key = stream_key(keys, thread_id, run_id)
        self.registry = keys.registry(thread_id)
        self.sealer = keys.sealer  # event data holds the run's values

    def publish(self, event: str, data: Any) -> str:
        with self.redis.pipeline(transaction=True) as pipe:
            pipe.xadd(
                self.key,
                {"event": event, "data": self.sealer.seal_text(encode(data), self.key, "data")},
            )
            pipe.sadd(self.registry, self.key)
            entry_id, _ = pipe.execute()
        return entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)

    def read(
        self, after: str = "0-0", *, follow: bool = True, alive: Any = None
    ) -> Iterator[tuple[str, str, str]]:
        """`(id, event, data)` after `after` until the end marker.

        `follow=False` stops at the current tail. `alive()` returning False stops a follow (the run
        is gone).
        """
        cursor = after or "0-0"
        while True:
            block = BLOCK_MS if follow else None
            got: Any = self.redis.xread({self.key: cursor}, count=500, block=block)
            entries = got[0][1] if got else []
            for entry_id, fields in entries:
                cursor = entry_id.decode()
                event = fields[b"event"].decode()
                if event == END:  # its data is the run's status, written in the clear
                    return
                data = self.sealer.open_text(fields[b"data"], self.key, "data")
                yield cursor, event, data
            if not entries and (not follow or (alive is not None and not alive())):
                return
