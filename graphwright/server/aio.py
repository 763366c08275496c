"""The asyncio Redis client of one event loop.

The worker's reads of the queue, the API's waits on a run's event stream. Its pool grows with the
blocking reads (up to `max_connections`), so a read that waits never holds a connection another
command needs.
"""

from __future__ import annotations

import redis.asyncio as aredis
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import Sentinel
from redis.backoff import ExponentialWithJitterBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from graphwright.aconnect import async_sentinel_kwargs
from graphwright.checkpoints.connect import SENTINEL_SCHEMES, parse_sentinel_url, sentinel_kwargs
from graphwright.saver import redis_url
from graphwright.settings import Settings

AsyncClient = aredis.Redis | AsyncRedisCluster
RETRIES = 8  # with the capped backoff below: a few seconds of outage ride through
POOL = 100  # redis-py's own default: enough for a worker's jobs and its housekeeping


def async_client(settings: Settings, *, max_connections: int = POOL) -> AsyncClient:
    """A client for the configured Redis (one server, Sentinels or a cluster) on this loop.

    Each blocking read holds one of its `max_connections` while it waits.
    """
    url = redis_url(settings)
    retry = Retry(
        ExponentialWithJitterBackoff(cap=1.0, base=0.05),
        RETRIES,
        supported_errors=(RedisConnectionError, RedisTimeoutError),
    )
    if settings.redis_cluster:
        return AsyncRedisCluster.from_url(url, retry=retry, max_connections=max_connections)
    if url.split("://", 1)[0] in SENTINEL_SCHEMES:
        target = parse_sentinel_url(url)
        sentinel = Sentinel(
            list(target.sentinels),  # type: ignore[no-untyped-call,unused-ignore]  # untyped in redis-py
            sentinel_kwargs=async_sentinel_kwargs(sentinel_kwargs(target)),
        )
        master: aredis.Redis = sentinel.master_for(
            target.service,
            db=target.db,
            password=target.password,
            ssl=target.ssl,
            retry=retry,
            max_connections=max_connections,
        )
        return master
    return aredis.Redis.from_url(url, retry=retry, max_connections=max_connections)
