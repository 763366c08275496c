"""LangGraph checkpoint savers on plain Redis (>= 6, Valkey, Redis Cluster).

Thin I/O shells over :mod:`checkpoints.ops`: ``RedisSaver`` drives the operations
with a blocking client, ``AsyncRedisSaver`` with an asyncio client.
"""

from __future__ import annotations

import asyncio
import builtins
import random
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import redis
import redis.asyncio as aredis
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    get_checkpoint_id,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.cluster import RedisCluster

from checkpoints import ops
from checkpoints.atomic import RUN_SCRIPT, RUN_SHA, first_key, for_transaction
from checkpoints.atomic import script_args as atomic_args
from checkpoints.drive import adrive, drive
from checkpoints.errors import ConfigurationError, InfrastructureError, RedisUnavailableError
from checkpoints.keys import DEFAULT_PREFIX, Keys
from checkpoints.sealed import LEGACY_KEY_ENV, SealCipher, sealer_from_env

T = TypeVar("T")
PAGE = 64
ENCRYPTION_KEY_ENV = LEGACY_KEY_ENV

SyncClient = redis.Redis | RedisCluster
AsyncClient = aredis.Redis | AsyncRedisCluster


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


def describe_client(client: SyncClient | AsyncClient) -> str:
    """A password-free address of the server a client talks to."""
    if isinstance(client, RedisCluster | AsyncRedisCluster):
        nodes = client.get_nodes()
        return "redis cluster " + ",".join(f"{n.host}:{n.port}" for n in nodes[:3])
    kwargs = client.connection_pool.connection_kwargs
    if "path" in kwargs:
        return f"unix://{kwargs['path']}"
    scheme = (
        "rediss" if client.connection_pool.connection_class.__name__.startswith("SSL") else "redis"
    )
    return f"{scheme}://{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}/{kwargs.get('db', 0)}"


def _check_client(client: SyncClient | AsyncClient) -> None:
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
    return EncryptedSerializer(SealCipher(sealer_from_env(encrypt=True)))


def _unavailable(where: str, exc: Exception) -> RedisUnavailableError:
    return RedisUnavailableError(
        f"Redis at {where} is unreachable ({exc}). Start Redis there, or set REDIS_URL "
        "to a running server; unset it to use the embedded Redis."
    )


class _SaverBase(BaseCheckpointSaver[str]):
    """State and pure helpers shared by the sync and async savers."""

    def __init__(
        self,
        *,
        prefix: str = DEFAULT_PREFIX,
        ttl_s: int | None = None,
        serde: SerializerProtocol | None = None,
        encrypt: bool = False,
    ) -> None:
        super().__init__(serde=serde or make_serde(encrypt=encrypt))
        self.keys = Keys(prefix=prefix)
        self.ttl_s = ttl_s
        self._script_sent = False

    @property
    def ctx(self) -> ops.Ctx:
        return ops.Ctx(keys=self.keys, serde=self.serde, ttl_s=self.ttl_s)

    def get_next_version(self, current: str | None, channel: None) -> str:
        """Zero-padded, so versions sort as strings; the random tail keeps forks apart."""
        if current is None:
            number = 0
        elif isinstance(current, int):
            number = current
        else:
            number = int(current.split(".")[0])
        return f"{number + 1:032}.{random.random():016}"


def _checked_prune(ctx: ops.Ctx, thread_ids: Sequence[str], strategy: str) -> ops.Op[None]:
    """The prune operation, with a bad strategy reported as the caller's mistake."""
    if strategy not in ops.PRUNE_STRATEGIES:
        raise ConfigurationError(
            f"unknown prune strategy {strategy!r}; use 'keep_latest' or 'delete'"
        )
    return ops.prune(ctx, thread_ids, strategy)


def _batch_commands(batch: ops.Batch, cluster: bool) -> tuple[list[ops.Command], list[ops.Command]]:
    """Split a batch into the atomic part and the (cluster-only) follow-up pipeline.

    Atomic parts run as one script call (see :mod:`checkpoints.atomic`) and give
    back no per-command replies: operations read nothing from their atomic batches.
    """
    if cluster:
        return batch.commands, batch.extra
    return batch.commands + batch.extra, []


class RedisSaver(_SaverBase):
    """Checkpoint saver over a blocking client; its async methods run in a thread."""

    def __init__(
        self,
        client: SyncClient,
        *,
        prefix: str = DEFAULT_PREFIX,
        ttl_s: int | None = None,
        serde: SerializerProtocol | None = None,
        encrypt: bool = False,
    ) -> None:
        super().__init__(prefix=prefix, ttl_s=ttl_s, serde=serde, encrypt=encrypt)
        _check_client(client)
        self.client = client
        self.cluster = isinstance(client, RedisCluster)
        self.where = describe_client(client)

    @classmethod
    def from_url(cls, url: str, *, cluster: bool = False, **kwargs: Any) -> RedisSaver:
        """Build from ``redis://``, ``rediss://`` or ``unix://``."""
        client: SyncClient = RedisCluster.from_url(url) if cluster else redis.Redis.from_url(url)
        saver = cls(client, **kwargs)
        saver.where = redact_url(url)
        return saver

    def _send(self, batch: ops.Batch) -> builtins.list[Any]:
        first, second = _batch_commands(batch, self.cluster)
        try:
            replies: builtins.list[Any] = []
            for cmds, atomic in ((first, batch.atomic), (second, False)):
                flat = atomic_args(cmds) if atomic else None
                if flat is not None:
                    replies += [None] * len(cmds)
                    self._script(flat, first_key(cmds))
                elif cmds:
                    pipe = self.client.pipeline(transaction=atomic and len(cmds) > 1)
                    for cmd in cmds:
                        pipe.execute_command(*for_transaction(cmd))
                    replies += pipe.execute()
            return replies
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            raise _unavailable(self.where, exc) from exc
        except redis.RedisError as exc:
            raise InfrastructureError(f"Redis at {self.where} refused a command: {exc}") from exc

    def _script(self, flat: builtins.list[Any], key: str) -> None:
        # The first call sends the body (caching it server-side); later ones its digest.
        if not self._script_sent:
            self.client.execute_command("EVAL", RUN_SCRIPT, 1, key, *flat)  # type: ignore[no-untyped-call]  # redis-py leaves it untyped
            self._script_sent = True
            return
        try:
            self.client.execute_command("EVALSHA", RUN_SHA, 1, key, *flat)  # type: ignore[no-untyped-call]  # redis-py leaves it untyped
        except redis.exceptions.NoScriptError:
            self.client.execute_command("EVAL", RUN_SCRIPT, 1, key, *flat)  # type: ignore[no-untyped-call]  # redis-py leaves it untyped

    def run(self, op: ops.Op[T]) -> T:
        """Drive an operation to completion, one round trip per batch."""
        return drive(op, self._send)

    # --- BaseCheckpointSaver ---

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self.run(ops.get_tuple(self.ctx, config))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        remaining = limit
        for thread_id, ns_list in self._scopes(config):
            for ns in ns_list:
                for page in self._pages(thread_id, ns, config, filter, before, remaining):
                    for tup in page:
                        if remaining is not None and remaining <= 0:
                            return
                        yield tup
                        if remaining is not None:
                            remaining -= 1

    def _scopes(self, config: RunnableConfig | None) -> Iterator[tuple[str, builtins.list[str]]]:
        if config is not None:
            thread_id = str(config["configurable"]["thread_id"])
            ns = config["configurable"].get("checkpoint_ns")
            yield (
                thread_id,
                [ns] if ns is not None else self.run(ops.namespaces(self.ctx, thread_id)),
            )
            return
        start = 0
        while threads := self.run(ops.thread_page(self.ctx, start, PAGE)):
            for thread_id, _ in threads:
                yield thread_id, self.run(ops.namespaces(self.ctx, thread_id))
            start += PAGE

    def _pages(
        self,
        thread_id: str,
        ns: str,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
    ) -> Iterator[builtins.list[CheckpointTuple]]:
        cursor = get_checkpoint_id(before) if before else None
        only = get_checkpoint_id(config) if config else None
        size = min(limit, PAGE) if limit else PAGE
        while True:
            page = self.run(
                ops.list_page(
                    self.ctx,
                    thread_id,
                    ns,
                    before_id=cursor,
                    size=size,
                    only_id=only,
                    filter=filter,
                )
            )
            yield page.tuples
            if page.exhausted:
                return
            cursor = page.last_id

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        now = int(time.time() * 1000)
        return self.run(ops.put(self.ctx, config, checkpoint, metadata, new_versions, now))

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        self.run(ops.put_writes(self.ctx, config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        self.run(ops.delete_thread(self.ctx, thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        self.run(ops.delete_for_runs(self.ctx, run_ids))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        now = int(time.time() * 1000)
        self.run(ops.copy_thread(self.ctx, source_thread_id, target_thread_id, now))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self.run(_checked_prune(self.ctx, thread_ids, strategy))

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        return self.run(ops.delta_channel_history(self.ctx, config, channels))

    def threads(self) -> builtins.list[tuple[str, float]]:
        """Every thread id with its last write time in epoch milliseconds, newest first."""
        out: builtins.list[tuple[str, float]] = []
        while page := self.run(ops.thread_page(self.ctx, len(out), PAGE)):
            out += page
        return out

    # --- async twins: the blocking client runs in a worker thread ---

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        items = await asyncio.to_thread(
            lambda: builtins.list(self.list(config, filter=filter, before=before, limit=limit))
        )
        for item in items:
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        return await asyncio.to_thread(
            lambda: self.get_delta_channel_history(config=config, channels=channels)
        )


class AsyncRedisSaver(_SaverBase):
    """Checkpoint saver over an asyncio client, for ``ainvoke``/``astream`` graphs."""

    def __init__(
        self,
        client: AsyncClient,
        *,
        prefix: str = DEFAULT_PREFIX,
        ttl_s: int | None = None,
        serde: SerializerProtocol | None = None,
        encrypt: bool = False,
    ) -> None:
        super().__init__(prefix=prefix, ttl_s=ttl_s, serde=serde, encrypt=encrypt)
        _check_client(client)
        self.client = client
        self.cluster = isinstance(client, AsyncRedisCluster)
        self.where = describe_client(client)

    @classmethod
    def from_url(cls, url: str, *, cluster: bool = False, **kwargs: Any) -> AsyncRedisSaver:
        """Build from ``redis://``, ``rediss://`` or ``unix://``."""
        client: AsyncClient = (
            AsyncRedisCluster.from_url(url) if cluster else aredis.Redis.from_url(url)
        )
        saver = cls(client, **kwargs)
        saver.where = redact_url(url)
        return saver

    async def _send(self, batch: ops.Batch) -> builtins.list[Any]:
        first, second = _batch_commands(batch, self.cluster)
        try:
            replies: builtins.list[Any] = []
            for cmds, atomic in ((first, batch.atomic), (second, False)):
                flat = atomic_args(cmds) if atomic else None
                if flat is not None:
                    replies += [None] * len(cmds)
                    await self._script(flat, first_key(cmds))
                elif cmds:
                    pipe = self.client.pipeline(transaction=atomic and len(cmds) > 1)
                    for cmd in cmds:
                        pipe.execute_command(*for_transaction(cmd))
                    replies += await pipe.execute()
            return replies
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            raise _unavailable(self.where, exc) from exc
        except redis.RedisError as exc:
            raise InfrastructureError(f"Redis at {self.where} refused a command: {exc}") from exc

    async def _script(self, flat: builtins.list[Any], key: str) -> None:
        # The first call sends the body (caching it server-side); later ones its digest.
        if not self._script_sent:
            await self.client.execute_command("EVAL", RUN_SCRIPT, 1, key, *flat)
            self._script_sent = True
            return
        try:
            await self.client.execute_command("EVALSHA", RUN_SHA, 1, key, *flat)
        except redis.exceptions.NoScriptError:
            await self.client.execute_command("EVAL", RUN_SCRIPT, 1, key, *flat)

    async def run(self, op: ops.Op[T]) -> T:
        """Drive an operation to completion, one round trip per batch."""
        return await adrive(op, self._send)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await self.run(ops.get_tuple(self.ctx, config))

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        remaining = limit
        async for thread_id, ns in self._scopes(config):
            cursor = get_checkpoint_id(before) if before else None
            only = get_checkpoint_id(config) if config else None
            while remaining is None or remaining > 0:
                size = min(remaining, PAGE) if remaining else PAGE
                page = await self.run(
                    ops.list_page(
                        self.ctx,
                        thread_id,
                        ns,
                        before_id=cursor,
                        size=size,
                        only_id=only,
                        filter=filter,
                    )
                )
                for tup in page.tuples:
                    if remaining is not None and remaining <= 0:
                        return
                    yield tup
                    if remaining is not None:
                        remaining -= 1
                if page.exhausted:
                    break
                cursor = page.last_id

    async def _scopes(self, config: RunnableConfig | None) -> AsyncIterator[tuple[str, str]]:
        if config is not None:
            thread_id = str(config["configurable"]["thread_id"])
            ns = config["configurable"].get("checkpoint_ns")
            for one in (
                [ns] if ns is not None else await self.run(ops.namespaces(self.ctx, thread_id))
            ):
                yield thread_id, one
            return
        start = 0
        while threads := await self.run(ops.thread_page(self.ctx, start, PAGE)):
            for thread_id, _ in threads:
                for one in await self.run(ops.namespaces(self.ctx, thread_id)):
                    yield thread_id, one
            start += PAGE

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        now = int(time.time() * 1000)
        return await self.run(ops.put(self.ctx, config, checkpoint, metadata, new_versions, now))

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await self.run(ops.put_writes(self.ctx, config, writes, task_id, task_path))

    async def adelete_thread(self, thread_id: str) -> None:
        await self.run(ops.delete_thread(self.ctx, thread_id))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await self.run(ops.delete_for_runs(self.ctx, run_ids))

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        now = int(time.time() * 1000)
        await self.run(ops.copy_thread(self.ctx, source_thread_id, target_thread_id, now))

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await self.run(_checked_prune(self.ctx, thread_ids, strategy))

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        return await self.run(ops.delta_channel_history(self.ctx, config, channels))

    async def athreads(self) -> builtins.list[tuple[str, float]]:
        """Every thread id with its last write time in epoch milliseconds, newest first."""
        out: builtins.list[tuple[str, float]] = []
        while page := await self.run(ops.thread_page(self.ctx, len(out), PAGE)):
            out += page
        return out

    # Sync calls on an async saver would block its event loop: refuse them clearly.

    def _sync_refused(self, name: str) -> ConfigurationError:
        return ConfigurationError(
            f"AsyncRedisSaver.{name} is async-only; use a{name} from async code, "
            "or RedisSaver for invoke()/stream()."
        )

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        raise self._sync_refused("get_tuple")

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        raise self._sync_refused("list")

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        raise self._sync_refused("put")

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        raise self._sync_refused("put_writes")
