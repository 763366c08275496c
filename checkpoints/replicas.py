"""Writes acknowledged by replicas: `WAIT` after each checkpoint and idempotency record.

Redis replicates asynchronously, so a master that dies right after answering a write can
take the write with it, and a promoted replica then re-runs a step or forgets a record.
With `GRAPHWRIGHT_WAIT_REPLICAS=N` such a write only returns once N replicas hold it,
or `GRAPHWRIGHT_WAIT_TIMEOUT_MS` has passed; fewer acknowledgements are logged as a
warning (the write itself stands: WAIT cannot undo it).

`WAIT` counts what its own connection wrote, and a pooled client may send the next
command on another connection. So the acknowledgement is a short-lived marker on the
write's slot followed by `WAIT` in one pipeline (one connection), sent to the node
serving that slot: replicas apply a master's writes in order, so once they hold the
marker they hold the write before it.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any

import redis
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.cluster import RedisCluster

from graphwright_errors import ConfigurationError

log = logging.getLogger(__name__)

WAIT_REPLICAS_ENV = "GRAPHWRIGHT_WAIT_REPLICAS"
WAIT_TIMEOUT_ENV = "GRAPHWRIGHT_WAIT_TIMEOUT_MS"
MARKER_TTL_MS = 60_000


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit():
        raise ConfigurationError(f"{name} must be a whole number >= 0, not {raw!r}")
    return int(raw)


@dataclass(frozen=True)
class ReplicaWait:
    """How many replicas must hold a write, and how long to wait for them."""

    replicas: int
    timeout_ms: int = 1000

    @classmethod
    def from_env(cls) -> ReplicaWait | None:
        """The setting from the environment; `None` (no waiting) unless it asks for replicas."""
        replicas = _env_int(WAIT_REPLICAS_ENV, 0)
        return cls(replicas, _env_int(WAIT_TIMEOUT_ENV, 1000)) if replicas else None

    def acknowledge(self, client: Any, marker_key: str, what: str) -> int:
        """Wait until the replicas hold every write sent so far to `marker_key`'s slot.

        Returns how many acknowledged. `what` names the write in the warning.
        """
        node = client
        if isinstance(client, RedisCluster):
            node = client.get_redis_connection(client.get_node_from_key(marker_key))  # type: ignore[no-untyped-call]  # untyped in redis-py
        try:
            with node.pipeline(transaction=False) as pipe:
                pipe.set(marker_key, 1, px=MARKER_TTL_MS)
                pipe.execute_command("WAIT", self.replicas, self.timeout_ms)
                acked = int(pipe.execute()[1])
        except redis.RedisError as exc:
            log.warning(
                "%s: could not confirm that %d replica(s) hold it (%s)", what, self.replicas, exc
            )
            return 0
        return self._report(acked, what)

    async def aacknowledge(self, client: Any, marker_key: str, what: str) -> int:
        """`acknowledge` on an asyncio client of the node holding `marker_key` (or a cluster's)."""
        if isinstance(client, AsyncRedisCluster):  # WAIT on the marker's node
            await client.set(marker_key, 1, px=MARKER_TTL_MS)
            node = client.get_node_from_key(marker_key)
            acked = await client.execute_command(
                "WAIT", self.replicas, self.timeout_ms, target_nodes=node
            )
            return self._report(int(acked), what)
        try:
            async with client.pipeline(transaction=False) as pipe:
                pipe.set(marker_key, 1, px=MARKER_TTL_MS)
                pipe.execute_command("WAIT", self.replicas, self.timeout_ms)
                acked = int((await pipe.execute())[1])
        except redis.RedisError as exc:
            log.warning(
                "%s: could not confirm that %d replica(s) hold it (%s)", what, self.replicas, exc
            )
            return 0
        return self._report(acked, what)

    def _report(self, acked: int, what: str) -> int:
        if acked < self.replicas:
            log.warning(
                "%s: only %d of %d replica(s) acknowledged it within %d ms; "
                "a failover now could lose it (%s)",
                what,
                acked,
                self.replicas,
                self.timeout_ms,
                WAIT_REPLICAS_ENV,
            )
        return acked
