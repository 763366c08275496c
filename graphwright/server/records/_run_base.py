"""What every part of the run store shares: its client, keys and settings, and its scripts.

Also the names it gives a thread's line of runs and the delayed queue, and how a record's
sealed fields are sealed and opened.
"""

from __future__ import annotations

from typing import Any

import redis
from redis.cluster import RedisCluster

from graphwright.checkpoints.errors import RedisUnavailableError
from graphwright.checkpoints.keys import Keys
from graphwright.checkpoints.replicas import ReplicaWait
from graphwright.server.records import run_scripts
from graphwright.server.records.event_log import TTL_S

SEALED_RUN = frozenset({b"body", b"error", b"output"})  # fields of a run record sealed at rest
RETENTION_S = 7 * 24 * 3600  # an ended run's record, without a thread TTL or a setting


class RunStoreBase:
    """The run store's client and settings, its scripts and the keys its parts share."""

    def __init__(
        self,
        client: redis.Redis,
        keys: Keys,
        *,
        retention_s: int = RETENTION_S,
        claim_window_s: float = 60.0,
    ) -> None:
        self.redis = client
        self.keys = keys
        self.retention_s = retention_s
        self.claim_window_s = claim_window_s  # how long a silent owner keeps a run
        self.cluster = isinstance(client, RedisCluster)  # queue keys live on other slots
        self.replicas = ReplicaWait.from_env()  # GRAPHWRIGHT_WAIT_REPLICAS, as for checkpoints
        self._scripts = {
            name: client.register_script(getattr(run_scripts, name))
            for name in (
                "CREATE",
                "CANCEL",
                "RELEASE_DUE",
                "HEARTBEAT",
                "TRIM",
                "CLAIM_DUE",
                "DISOWN",
            )
        }

    def script(self, name: str, keys: list[str], args: list[Any]) -> Any:
        try:
            return self._scripts[name](keys=keys, args=args)
        except redis.ConnectionError as exc:
            raise RedisUnavailableError(f"cannot reach Redis for the run store: {exc}") from exc

    def inflight(self, thread_id: str) -> str:
        return f"{self.keys.thread_tag(thread_id)}:inflight"

    def delayed(self) -> str:
        return f"{self.keys.queue()}:delayed"

    def record_prefix(self, thread_id: str) -> str:
        return self.keys.run_record(thread_id, "")

    def opened(self, key: str, data: dict[bytes, bytes]) -> dict[str, str]:
        """A run record as read from Redis (`HGETALL` of `key`), its sealed fields opened."""
        return {
            k.decode(): v.decode()
            if k not in SEALED_RUN or v in run_scripts.CLEAR_ERRORS
            else self.keys.sealer.open_text(v, key, k)
            for k, v in data.items()
        }

    def _sealed(self, key: str, record: dict[str, str]) -> dict[str, str | bytes]:
        return {
            k: self.keys.sealer.seal_text(v, key, k) if k.encode() in SEALED_RUN else v
            for k, v in record.items()
        }

    def events_ttl(self) -> int:
        return min(TTL_S, self.retention_s)
