"""The asyncio twin of a blocking Redis client: same server, same database, same credentials.

The run core's checkpoint saver and store use it on the run loop; everything else keeps
the blocking client. Commands retry through a restart like the blocking client's do.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import socket
import threading
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import redis
import redis.asyncio as aredis
from redis.asyncio.cluster import ClusterNode
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import Sentinel
from redis.backoff import ExponentialWithJitterBackoff, NoBackoff
from redis.cluster import RedisCluster
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.sentinel import SentinelConnectionPool

from graphwright.checkpoints import direct

if TYPE_CHECKING:  # the `show` and `trace` paths load no LangGraph (tests/cli/test_startup.py)
    from graphwright.checkpoints.saver_base import AsyncClient

KEPT = (
    "host",
    "port",
    "db",
    "username",
    "password",
    "path",
    "socket_timeout",
    "socket_connect_timeout",
    "client_name",
    "ssl_ca_certs",
    "ssl_certfile",
    "ssl_keyfile",
    "ssl_cert_reqs",
    "ssl_check_hostname",
)


def _retry(budget_s: float) -> Retry:
    # redis.asyncio's Retry counts attempts; about the blocking client's time budget at a
    # 1 s backoff cap.
    return Retry(
        ExponentialWithJitterBackoff(cap=1.0, base=0.05),
        retries=max(1, int(budget_s)) + 4,
        supported_errors=(RedisConnectionError, RedisTimeoutError),
    )


def async_twin(client: redis.Redis | RedisCluster, *, retry_budget_s: float = 15.0) -> AsyncClient:
    """An asyncio client for the server (or cluster, or Sentinel master) `client` talks to."""
    retry = _retry(retry_budget_s)
    if isinstance(client, RedisCluster):
        # Every node the blocking client knows, not one: a twin started from a master that
        # has since died could not read the slot map again, and a failover would be an outage.
        known: list[Any] = client.get_nodes()  # type: ignore[no-untyped-call,unused-ignore]  # untyped
        options: dict[str, Any] = client.get_connection_kwargs()  # type: ignore[no-untyped-call,unused-ignore]
        nodes = [ClusterNode(n.host, n.port) for n in known]
        kwargs = {k: v for k, v in _kept(options).items() if k not in ("host", "port")}
        return AsyncRedisCluster(startup_nodes=nodes, retry=retry, **kwargs)
    pool = client.connection_pool
    kwargs = _kept(pool.connection_kwargs)
    if isinstance(pool, SentinelConnectionPool):
        manager = pool.sentinel_manager
        hosts = [
            (
                s.connection_pool.connection_kwargs["host"],
                s.connection_pool.connection_kwargs["port"],
            )
            for s in manager.sentinels
        ]
        sentinel = Sentinel(
            hosts,  # type: ignore[no-untyped-call,unused-ignore]  # untyped in redis-py
            sentinel_kwargs=async_sentinel_kwargs(manager.sentinel_kwargs),
        )
        master: aredis.Redis = sentinel.master_for(pool.service_name, retry=retry, **kwargs)
        return master
    connection: type[aredis.Connection | aredis.UnixDomainSocketConnection | aredis.SSLConnection]
    if issubclass(pool.connection_class, redis.UnixDomainSocketConnection):
        connection = aredis.UnixDomainSocketConnection
    elif issubclass(pool.connection_class, redis.SSLConnection):
        connection = aredis.SSLConnection
    else:
        connection = aredis.Connection
    return aredis.Redis(
        connection_pool=LoopPools(connection_class=connection, retry=retry, **kwargs)
    )


class LoopPools(aredis.ConnectionPool):
    """A connection pool per event loop, behind one client.

    An asyncio connection belongs to the loop that opened it, so one pool cannot serve two
    loops. With one per loop, a run may go on the loop of whoever awaits it (an application's
    own, as LangGraph's `ainvoke` does) with the same client, saver and store as the run loop:
    no hand-over between loops for each run. A closed loop's pool (`asyncio.run` returned) is
    dropped, its sockets shut, when the next loop comes or the client closes.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._options = kwargs
        self._guard = threading.Lock()
        self._pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, aredis.ConnectionPool]
        self._pools = weakref.WeakKeyDictionary()

    def here(self) -> aredis.ConnectionPool:
        """The running loop's pool, made the first time this loop asks."""
        loop = asyncio.get_running_loop()
        pool = self._pools.get(loop)
        if pool is None:
            self._drop_closed()
            with self._guard:
                pool = self._pools.setdefault(loop, aredis.ConnectionPool(**self._options))
        return pool

    def _drop_closed(self) -> None:
        """Forget the pools of loops closed since (`asyncio.run` returned), their sockets shut."""
        with self._guard:
            gone = [(loop, pool) for loop, pool in self._pools.items() if loop.is_closed()]
            for loop, _ in gone:
                del self._pools[loop]
        for _, pool in gone:
            _shut(pool)

    async def get_connection(self, *args: Any, **options: Any) -> Any:
        pool: Any = self.here()  # redis-py leaves its pools untyped
        return await pool.get_connection(*args, **options)

    async def release(self, connection: Any) -> None:
        pool: Any = self.here()
        await pool.release(connection)

    async def disconnect(self, inuse_connections: bool = True) -> None:
        """This loop's connections; other loops' are closed on their own loop, unawaited."""
        here = asyncio.get_running_loop()
        self._drop_closed()
        with self._guard:
            pools = list(self._pools.items())
        for loop, pool in pools:
            if loop is here:
                await pool.disconnect(inuse_connections)
            elif not loop.is_closed() and _connected(pool):
                with contextlib.suppress(RuntimeError):  # it closed meanwhile
                    asyncio.run_coroutine_threadsafe(pool.disconnect(inuse_connections), loop)

    def set_retry(self, retry: Any) -> None:
        super().set_retry(retry)
        with self._guard:
            pools = list(self._pools.values())
        for pool in pools:
            pool.set_retry(retry)


def _connections(pool: aredis.ConnectionPool) -> list[Any]:
    """Every connection of `pool`, idle or in use (redis-py keeps both lists private)."""
    return [*pool._available_connections, *pool._in_use_connections]


def _connected(pool: aredis.ConnectionPool) -> bool:
    """Whether any connection of `pool` is open."""
    return any(connection.is_connected for connection in _connections(pool))


def _shut(pool: aredis.ConnectionPool) -> None:
    """Shut the sockets of a pool whose loop has closed: its transports can no longer close them.

    The server sees them go at once; the file descriptors close as the transports are collected.
    A connection's stream is private to redis-py too: read here only.
    """
    for connection in _connections(pool):
        writer = connection._writer
        sock = writer.transport.get_extra_info("socket") if writer is not None else None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


def loop_portable(client: AsyncClient) -> bool:
    """Whether `client` serves any event loop (its pool is `LoopPools`), not only the run loop."""
    return isinstance(getattr(client, "connection_pool", None), LoopPools)


def async_sentinel_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    """A sentinel client's options (checkpoints.connect.sentinel_kwargs) for redis.asyncio.

    Its own no-retry policy in place of the blocking one.
    """
    return {**kwargs, "retry": Retry(NoBackoff(), 0)}


def _kept(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in kwargs.items() if k in KEPT and v is not None}


_KNOWN: dict[str, str] = {}  # every AsyncScript's body by its SHA, to load what a batch names


class AsyncScript:
    """A Lua script the run core calls on the run loop.

    `EVALSHA` in one round trip (`checkpoints.direct`, no redis-py Script or Pipeline), loaded on
    `NOSCRIPT`.
    """

    def __init__(self, body: str) -> None:
        self.body = body
        self.sha = hashlib.sha1(body.encode()).hexdigest()  # Redis's script name
        _KNOWN[self.sha] = body

    def command(self, keys: Sequence[Any], args: Sequence[Any]) -> tuple[Any, ...]:
        return ("EVALSHA", self.sha, len(keys), *keys, *args)

    async def __call__(self, client: AsyncClient, keys: Sequence[Any], args: Sequence[Any]) -> Any:
        (reply,) = await batch(client, [self.command(keys, args)])
        return reply


async def batch(client: AsyncClient, commands: Sequence[Sequence[Any]]) -> list[Any]:
    """`commands` in one round trip (a cluster: one at a time, each routed by its key).

    On `NOSCRIPT` every `AsyncScript` they call is loaded and the batch is sent again (so a
    batch with scripts holds writes that are safe to replay: the scripts are refused whole).
    """
    try:
        return await _send(client, commands)
    except NoScriptError:
        named = {str(cmd[1]) for cmd in commands if cmd and cmd[0] == "EVALSHA"}
        for sha in sorted(named & _KNOWN.keys()):
            await client.script_load(_KNOWN[sha])
        return await _send(client, commands)


async def _send(client: AsyncClient, commands: Sequence[Sequence[Any]]) -> list[Any]:
    if isinstance(client, aredis.Redis):
        return await direct.aexecute(client, commands)
    return [await client.execute_command(*cmd) for cmd in commands]
