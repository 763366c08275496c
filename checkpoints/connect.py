"""Open a Redis client for a URL: a single server, a Cluster, or a Sentinel-managed master.

Sentinel URLs name the sentinels and the service:
`redis+sentinel://[:password@]host:port[,host:port...]/service_name[/db]`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import redis
from redis.backoff import ExponentialWithJitterBackoff, NoBackoff
from redis.cluster import RedisCluster
from redis.exceptions import RedisClusterException
from redis.retry import Retry
from redis.sentinel import Sentinel

from graphwright.checkpoints.errors import RedisUnavailableError
from graphwright_errors import ConfigurationError

SENTINEL_SCHEMES = ("redis+sentinel", "rediss+sentinel")


@dataclass(frozen=True, kw_only=True)
class SentinelTarget:
    """Where the sentinels are and which master they watch."""

    sentinels: tuple[tuple[str, int], ...]
    service: str
    db: int = 0
    password: str | None = None
    ssl: bool = False


def redact_url(url: str) -> str:
    """The URL with any password replaced, safe for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    user = f"{parts.username}:***@" if parts.username else "***@"
    return urlunsplit((parts.scheme, user + host, parts.path, parts.query, parts.fragment))


def parse_sentinel_url(url: str) -> SentinelTarget:
    """Split a `redis+sentinel://` URL; a malformed one is a configuration error."""
    parts = urlsplit(url)
    if parts.scheme not in SENTINEL_SCHEMES:
        raise ConfigurationError(
            f"not a sentinel URL (expected redis+sentinel://): {parts.scheme}://"
        )
    netloc = parts.netloc.rpartition("@")
    credentials, hosts = netloc[0], netloc[2]
    password = unquote(credentials.partition(":")[2] or credentials) if credentials else None
    sentinels: list[tuple[str, int]] = []
    for item in filter(None, hosts.split(",")):
        host, _, port = item.rpartition(":")
        if not host or not port.isdigit():
            raise ConfigurationError(f"sentinel address {item!r} must be host:port")
        sentinels.append((host.strip("[]"), int(port)))
    path = [p for p in parts.path.split("/") if p]
    if not sentinels or not path:
        raise ConfigurationError(
            "a sentinel URL needs sentinels and a service name: "
            "redis+sentinel://host:26379[,host:26379]/mymaster[/db]"
        )
    db = path[1] if len(path) > 1 else "0"
    if not db.isdigit():
        raise ConfigurationError(f"sentinel URL database must be a number, not {db!r}")
    return SentinelTarget(
        sentinels=tuple(sentinels),
        service=unquote(path[0]),
        db=int(db),
        password=password or None,
        ssl=parts.scheme.startswith("rediss"),
    )


class RetryingCluster(RedisCluster):
    """A cluster client that waits out a failover instead of giving up at once.

    redis-py's cluster client retries a failed command straight away, re-reading the
    slot map, so while a dead master is still being replaced every attempt fails within
    milliseconds. This one retries single commands and scripts (what graphwright's writes
    are) with exponential backoff and jitter until `failover_budget_s` is spent.
    """

    failover_budget_s: float = 15.0

    def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        deadline = time.monotonic() + self.failover_budget_s
        backoff = ExponentialWithJitterBackoff(base=0.05, cap=1.0)
        failures = 0
        while True:
            try:
                return super().execute_command(*args, **kwargs)  # type: ignore[no-untyped-call,unused-ignore]  # untyped in redis-py
            except RedisCluster.ERRORS_ALLOW_RETRY:
                failures += 1
                pause = backoff.compute(failures)
                if time.monotonic() + pause > deadline:
                    raise
                time.sleep(pause)


def sentinel_kwargs(target: SentinelTarget) -> dict[str, Any]:
    """What each sentinel's own client gets.

    Its password, and no retries. A sentinel that does not answer is passed over for the next at
    once (redis-py's default retries spent 4 s on each); the master's client retries the whole
    discovery within its own budget.
    """
    kwargs: dict[str, Any] = {"retry": Retry(NoBackoff(), 0)}
    if target.password:
        kwargs["password"] = target.password
    return kwargs


def connect(
    url: str, *, cluster: bool = False, failover_budget_s: float = 15.0, **client_options: Any
) -> Any:
    """The client for `url`; `client_options` (timeouts, `retry`...) go to every connection.

    A cluster client rides through a failover for `failover_budget_s`.
    """
    if url.split("://", 1)[0] in SENTINEL_SCHEMES:
        target = parse_sentinel_url(url)
        sentinel = Sentinel(  # type: ignore[no-untyped-call,unused-ignore]  # redis-py leaves it untyped
            list(target.sentinels),
            sentinel_kwargs=sentinel_kwargs(target),
            **client_options,
        )
        return sentinel.master_for(  # type: ignore[no-untyped-call,unused-ignore]  # as above
            target.service,
            db=target.db,
            password=target.password,
            ssl=target.ssl,
        )
    if cluster:
        try:  # a cluster client reads the slot map as it is built, so it can fail here
            client: RetryingCluster = RetryingCluster.from_url(url, **client_options)  # type: ignore[assignment]  # from_url returns the subclass
            client.failover_budget_s = failover_budget_s
            return client
        except RedisClusterException as exc:
            raise RedisUnavailableError(
                f"Redis Cluster at {redact_url(url)} is not reachable: no startup node answered"
            ) from exc
    return redis.Redis.from_url(url, **client_options)
