"""LangGraph checkpoint savers on plain Redis (>= 6, Valkey, Redis Cluster).

Thin I/O shells over `graphwright.checkpoints.ops`: `RedisSaver` drives the operations
with a blocking client, `AsyncRedisSaver` (in `graphwright.checkpoints.redis_async`) with
an asyncio client.
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import redis
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from redis.cluster import RedisCluster

from graphwright.checkpoints import atomic, direct, ops, ops_admin, ops_delta, ops_list
from graphwright.checkpoints.drive import drive, stream
from graphwright.checkpoints.keys import DEFAULT_PREFIX
from graphwright.checkpoints.migrate import migrate_thread
from graphwright.checkpoints.redis_async import AsyncRedisSaver
from graphwright.checkpoints.replicas import ReplicaWait
from graphwright.checkpoints.saver_base import (
    SaverBase,
    SyncClient,
    before_id,
    check_client,
    checked_prune,
    describe_client,
    is_batch,
    now_ms,
    redact_url,
    translate,
)

__all__ = ["AsyncRedisSaver", "RedisSaver", "redact_url"]

T = TypeVar("T")


class RedisSaver(SaverBase):
    """Checkpoint saver over a blocking client; its async methods run in a thread."""

    def __init__(
        self,
        client: SyncClient,
        *,
        prefix: str = DEFAULT_PREFIX,
        ttl_s: int | None = None,
        serde: SerializerProtocol | None = None,
        encrypt: bool = False,
        wait: ReplicaWait | None = None,
    ) -> None:
        """`wait` (default: GRAPHWRIGHT_WAIT_REPLICAS) makes every put wait for replicas."""
        cluster = isinstance(client, RedisCluster)
        super().__init__(prefix=prefix, ttl_s=ttl_s, serde=serde, encrypt=encrypt, cluster=cluster)
        check_client(client)
        self.client = client
        self.where = describe_client(client)
        self.wait = wait or ReplicaWait.from_env()

    @classmethod
    def from_url(cls, url: str, *, cluster: bool = False, **kwargs: Any) -> RedisSaver:
        """Build from `redis://`, `rediss://` or `unix://`."""
        client: SyncClient = RedisCluster.from_url(url) if cluster else redis.Redis.from_url(url)
        saver = cls(client, **kwargs)
        saver.where = redact_url(url)
        return saver

    def _send(self, batch: ops.Batch) -> builtins.list[Any]:
        cmds, transaction, fake = atomic.plan(batch)
        try:
            try:
                replies = self._execute(cmds, transaction, atomic.wire)
            except redis.exceptions.NoScriptError:
                # A new or restarted server: load every script (on every node) once.
                for body in atomic.script_bodies():
                    self.client.script_load(body)
                replies = self._execute(cmds, transaction, atomic.wire)
        except redis.RedisError as exc:
            raise translate(self.where, exc) from exc
        return [None] * fake if fake else replies

    def _execute(
        self,
        cmds: builtins.list[ops.Command],
        transaction: bool,
        wire: Callable[[ops.Command], ops.Command],
    ) -> builtins.list[Any]:
        if not transaction and isinstance(self.client, redis.Redis):
            return direct.execute(self.client, [wire(cmd) for cmd in cmds])
        if len(cmds) == 1 and not transaction:
            return [self.client.execute_command(*wire(cmds[0]))]  # type: ignore[no-untyped-call]  # redis-py leaves it untyped
        pipe = self.client.pipeline(transaction=transaction)
        for cmd in cmds:
            pipe.execute_command(*wire(cmd))
        return pipe.execute()

    def run(self, op: ops.Op[T]) -> T:
        """Drive an operation to completion, one round trip per batch."""
        return drive(op, self._send)

    def _read(self, make: Callable[[], ops.Op[T]]) -> T:
        """Run a read; a thread of layout 1 is migrated first."""
        try:
            return self.run(make())
        except ops.LegacyThread as legacy:
            self.run(migrate_thread(self.ctx, legacy.thread_id))
            return self.run(make())

    # --- BaseCheckpointSaver ---

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self._read(lambda: ops.get_tuple(self.ctx, config))

    def _pages(
        self,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
    ) -> Iterator[builtins.list[CheckpointTuple]]:
        nss = None
        if config is not None and config["configurable"].get("checkpoint_ns") is None:
            # Read (and migrate a layout-1 thread) first: the listing meets layout 2 only.
            thread_id = str(config["configurable"]["thread_id"])
            nss = self._read(lambda: ops_list.namespaces(self.ctx, thread_id))
        op = ops_list.listing(
            self.ctx, config, filter=filter, before_id=before_id(before), limit=limit, nss=nss
        )
        return stream(op, is_batch, self._send)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        for page in self._pages(config, filter, before, limit):
            yield from page

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        saved = self.run(ops.put(self.ctx, config, checkpoint, metadata, new_versions, now_ms()))
        self._acknowledge(config, "checkpoint")
        return saved

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        self.run(ops.put_writes(self.ctx, config, writes, task_id, task_path))
        self._acknowledge(config, "pending writes")

    def _acknowledge(self, config: RunnableConfig, what: str) -> None:
        if self.wait is not None:
            thread_id = str(config["configurable"]["thread_id"])
            self.wait.acknowledge(
                self.client, self.keys.replica_ack(thread_id), f"{what} of thread {thread_id!r}"
            )

    def delete_thread(self, thread_id: str) -> None:
        self.run(ops_admin.delete_thread(self.ctx, str(thread_id)))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        self.run(ops_admin.delete_for_runs(self.ctx, [str(r) for r in run_ids]))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self._read(lambda: ops_list.namespaces(self.ctx, str(source_thread_id)))
        self.run(
            ops_admin.copy_thread(self.ctx, str(source_thread_id), str(target_thread_id), now_ms())
        )

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self.run(checked_prune(self.ctx, thread_ids, strategy))

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        return self.run(ops_delta.delta_channel_history(self.ctx, config, channels))

    def migrate(self, thread_id: str) -> None:
        """Rewrite a thread stored by layout 1 (reads do this on their own)."""
        self.run(migrate_thread(self.ctx, thread_id))

    def threads(self) -> builtins.list[tuple[str, float]]:
        """Every thread id with its last activity time in epoch milliseconds, newest first."""
        return self.run(ops_list.all_threads(self.ctx))

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
        pages = await asyncio.to_thread(self._pages, config, filter, before, limit)
        while (page := await asyncio.to_thread(next, pages, None)) is not None:
            for tup in page:
                yield tup

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
