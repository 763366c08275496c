"""What graphwright needs of the Redis server it is given, checked once at start.

The minimum is Redis 6.2 or Valkey 7.2 (the workers use `XAUTOCLAIM` and `GETDEL`),
and an eviction policy that never drops checkpoints, locks or idempotency records.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from graphwright.checkpoints.errors import EvictingServerError
from graphwright_errors import ConfigurationError

log = logging.getLogger(__name__)

MIN_REDIS = (6, 2)
MIN_VALKEY = (7, 2)
SAFE_POLICIES = frozenset({"noeviction"})
RECOMMENDED = (
    "set 'maxmemory-policy noeviction' (and 'appendonly yes', 'appendfsync everysec') "
    "on the server graphwright uses"
)


@dataclass(frozen=True, kw_only=True)
class ServerInfo:
    """The facts about a server that decide whether graphwright can rely on it."""

    name: str  # "redis" or "valkey"
    version: tuple[int, ...]
    eviction_policy: str

    @property
    def label(self) -> str:
        return f"{self.name} {'.'.join(map(str, self.version))}"


def parse_version(text: str) -> tuple[int, ...]:
    """`"7.2.4"` -> `(7, 2, 4)`; a suffix such as `-rc1` ends the number it follows."""
    parts: list[int] = []
    for piece in text.split("."):
        digits = re.match(r"\d+", piece)
        if digits is None:
            break
        parts.append(int(digits.group()))
        if digits.end() < len(piece):
            break
    return tuple(parts)


def server_info(info: Mapping[str, Any]) -> ServerInfo:
    """Read name, version and eviction policy from the merged `INFO server`/`memory` sections."""
    if "valkey_version" in info or str(info.get("server_name", "")).lower() == "valkey":
        name, version = "valkey", str(info.get("valkey_version", info.get("redis_version", "0")))
    else:
        name, version = "redis", str(info.get("redis_version", "0"))
    return ServerInfo(
        name=name,
        version=parse_version(version),
        eviction_policy=str(info.get("maxmemory_policy", "noeviction")),
    )


def problems(server: ServerInfo) -> tuple[str | None, str | None]:
    """(fatal version problem, eviction problem): `None` where all is well."""
    minimum = MIN_VALKEY if server.name == "valkey" else MIN_REDIS
    too_old = None
    if server.version < minimum:
        too_old = (
            f"{server.label} is too old: graphwright needs Redis >= 6.2 or Valkey >= 7.2 "
            "(XAUTOCLAIM, GETDEL); upgrade the server"
        )
    evicts = None
    if server.eviction_policy not in SAFE_POLICIES:
        evicts = (
            f"the Redis server's maxmemory-policy is {server.eviction_policy!r}: under memory "
            "pressure it may evict checkpoints, thread locks and idempotency records, silently "
            f"losing runs or repeating side effects; {RECOMMENDED}"
        )
    return too_old, evicts


def _merged_info(client: Any) -> dict[str, Any]:
    """INFO of a single node, or of the first node of a cluster (all nodes share a config)."""
    merged: dict[str, Any] = {}
    for section in ("server", "memory"):
        reply = client.info(section)
        if reply and all(isinstance(v, dict) for v in reply.values()):
            reply = next(iter(reply.values()))  # cluster: {node: info}
        merged.update(reply)
    return merged


def check_server(client: Any, *, refuse_eviction: bool = False) -> ServerInfo:
    """Refuse a server that is too old; warn (or refuse) on an evicting memory policy."""
    server = server_info(_merged_info(client))
    too_old, evicts = problems(server)
    if too_old:
        raise ConfigurationError(too_old)
    if evicts:
        if refuse_eviction:
            raise EvictingServerError(evicts)
        log.warning("WARNING: %s", evicts)
    return server
