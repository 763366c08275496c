"""What the sync and async Redis savers share.

Client checks, errors, the operations they run and the batch plan of a send.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Sequence
from typing import Any

import redis
import redis.asyncio as aredis
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.base import SerializerProtocol
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.cluster import RedisCluster

from graphwright.checkpoints import ops, ops_admin
from graphwright.checkpoints.connect import (
    redact_url as redact_url,  # re-exported: the savers' importers
)
from graphwright.checkpoints.errors import LockLostError, RedisUnavailableError
from graphwright.checkpoints.keys import DEFAULT_PREFIX, Keys
from graphwright.checkpoints.scripts import LOCK_LOST
from graphwright.checkpoints.sealed import LEGACY_KEY_ENV, sealer_from_env
from graphwright.checkpoints.sealed_serde import SealedSerializer
from graphwright_errors import ConfigurationError, InfrastructureError

ENCRYPTION_KEY_ENV = LEGACY_KEY_ENV

SyncClient = redis.Redis | RedisCluster
AsyncClient = aredis.Redis | AsyncRedisCluster


def describe_client(client: SyncClient | AsyncClient) -> str:
    """A password-free address of the server a client talks to."""
    if isinstance(client, RedisCluster | AsyncRedisCluster):
        nodes = client.get_nodes()
        return "redis cluster " + ",".join(f"{n.host}:{n.port}" for n in nodes[:3])
    pool: Any = client.connection_pool
    if getattr(pool, "service_name", None) is not None:  # a Sentinel pool: no host of its own
        sentinels = ",".join(
            f"{s.connection_pool.connection_kwargs.get('host')}:"
            f"{s.connection_pool.connection_kwargs.get('port')}"
            for s in pool.sentinel_manager.sentinels
        )
        return f"redis+sentinel://{sentinels}/{pool.service_name}"
    kwargs = pool.connection_kwargs
    if "path" in kwargs:
        return f"unix://{kwargs['path']}"
    scheme = (
        "rediss" if client.connection_pool.connection_class.__name__.startswith("SSL") else "redis"
    )
    host, port, db = kwargs.get("host", "localhost"), kwargs.get("port", 6379), kwargs.get("db", 0)
    return f"{scheme}://{host}:{port}/{db}"


def check_client(client: SyncClient | AsyncClient) -> None:
    """Refuse a client that decodes responses: the saver stores bytes and must read them back."""
    if isinstance(client, RedisCluster | AsyncRedisCluster):
        decode = client.get_connection_kwargs().get("decode_responses", False)
    else:
        decode = client.connection_pool.connection_kwargs.get("decode_responses", False)
    if decode:
        raise ConfigurationError(
            "the Redis client has decode_responses=True; checkpoints are binary. "
            "Pass a client created with decode_responses=False."
        )


def make_serde(*, encrypt: bool) -> SerializerProtocol | None:
    """LangGraph's serializer, or its encrypted twin sealed with the keys from the environment."""
    if not encrypt:
        return None
    return SealedSerializer(sealer_from_env(encrypt=True))


def translate(where: str, exc: redis.RedisError) -> Exception:
    """The graphwright error for a redis-py error."""
    if isinstance(exc, redis.ConnectionError | redis.TimeoutError):
        return RedisUnavailableError(f"Redis at {where} is unreachable ({exc})")
    if LOCK_LOST in str(exc):
        return LockLostError(
            f"this process no longer holds the thread; Redis at {where} refused its write: "
            f"{str(exc)[str(exc).index(LOCK_LOST) :]}"
        )
    return InfrastructureError(f"Redis at {where} refused a command: {exc}")


class SyncCallOnLoopError(ConfigurationError, asyncio.InvalidStateError):
    """A sync method of an async saver was called on the saver's own event loop."""


def now_ms() -> int:
    """Wall-clock milliseconds, the unit of the saver's stored times."""
    return int(time.time() * 1000)


class SaverBase(BaseCheckpointSaver[str]):
    """State and pure helpers shared by the sync and async savers."""

    def __init__(
        self,
        *,
        prefix: str = DEFAULT_PREFIX,
        ttl_s: int | None = None,
        serde: SerializerProtocol | None = None,
        encrypt: bool = False,
        cluster: bool = False,
    ) -> None:
        super().__init__(serde=serde or make_serde(encrypt=encrypt))
        self.keys = Keys(prefix=prefix)
        self.ttl_s = ttl_s
        self.cluster = cluster
        # The Agent Server's savers name the thread in every checkpoint's metadata; LangGraph's
        # saver contract (its own test suite) does not. graphwright's service turns it on.
        self.stamp_thread = False
        self._ctx: ops.Ctx | None = None

    @property
    def ctx(self) -> ops.Ctx:
        # Cached: a put builds no context; rebuilt if a caller swaps serde or TTL.
        ctx = self._ctx
        if (
            ctx is None
            or ctx.serde is not self.serde
            or ctx.ttl_s != self.ttl_s
            or ctx.stamp_thread != self.stamp_thread
        ):
            ctx = self._ctx = ops.Ctx(
                keys=self.keys,
                serde=self.serde,
                ttl_s=self.ttl_s,
                cluster=self.cluster,
                stamp_thread=self.stamp_thread,
            )
        return ctx

    def get_next_version(self, current: str | None, channel: None) -> str:
        """Zero-padded, so versions sort as strings; the random tail keeps forks apart."""
        if current is None:
            number = 0
        elif isinstance(current, int):
            number = current
        else:
            number = int(current.split(".")[0])
        return f"{number + 1:032}.{random.random():016}"


def checked_prune(ctx: ops.Ctx, thread_ids: Sequence[str], strategy: str) -> ops.Op[None]:
    """The prune operation, with a caller's mistake refused before any write."""
    if isinstance(thread_ids, str | bytes):
        raise ConfigurationError(
            f"prune takes a sequence of thread ids, not the string {thread_ids!r}; "
            f"pass [{thread_ids!r}]"
        )
    if strategy not in ops_admin.PRUNE_STRATEGIES:
        raise ConfigurationError(
            f"unknown prune strategy {strategy!r}; use 'keep_latest' or 'delete'"
        )
    return ops_admin.prune(ctx, [str(t) for t in thread_ids], strategy)


def before_id(before: RunnableConfig | None) -> str | None:
    """The checkpoint id a `before` config names, if any."""
    return before["configurable"].get("checkpoint_id") if before else None


def is_batch(item: Any) -> bool:
    """Whether an operation yielded commands to run (as opposed to returning its result)."""
    return isinstance(item, ops.Batch)
